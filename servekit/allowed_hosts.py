"""Which Host names a server here answers to: the defence against DNS rebinding. Pure.

A page on attacker.example can point its own name at 127.0.0.1 and then reach a local
server from the browser, but its requests still say `Host: attacker.example`. So every
server answers only for the names it serves, and `RequestLimits` refuses the rest (421):

- loopback names: `localhost` and any name under `.localhost` (RFC 6761 keeps them local);
- any IP address literal: a rebinding attack needs a DNS name, so an address is safe, and
  a server bound to every interface stays reachable by each of its addresses;
- the name the server was told to listen on, and the names given (`--allowed-hosts`,
  `SG_ALLOWED_HOSTS`): `box.lan` is that name, `.lan` a domain and every name under it,
  and `*` any name (for a reverse proxy that checks Host itself).

A request with no Host header at all (HTTP/1.0) is let through: it names no site, and
RequestLimits already requires the header of HTTP/1.1.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ANY_HOST", "HostPolicy", "host_name", "parse_allowed_hosts"]

ANY_HOST = "*"
ENV = "SG_ALLOWED_HOSTS"
"""The environment variable every server's command line reads its extra names from."""

_NAME = re.compile(r"\.?[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?")


def host_name(host: str) -> str:
    """The name or address of a Host header's value, its port and brackets removed, lower
    case, without a trailing dot."""
    if host.startswith("["):
        return host[1 : host.find("]")].lower() if "]" in host else host.lower()
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name.lower().rstrip(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def parse_allowed_hosts(text: str) -> tuple[str, ...]:
    """The names of an `--allowed-hosts` value (comma- or space-separated); ValueError
    naming the first that is not a host name, a `.domain` or `*`."""
    names: list[str] = []
    for given in re.split(r"[,\s]+", text.strip()):
        if not given:
            continue
        name = given.lower().rstrip(".") if given != "." else given
        if name != ANY_HOST and _NAME.fullmatch(name) is None and not _is_address(name):
            raise ValueError(
                f"allowed hosts: {given!r} is not a host name, a .domain or {ANY_HOST!r}"
            )
        names.append(name)
    return tuple(names)


@dataclass(frozen=True)
class HostPolicy:
    """The names a server answers to besides loopback names and IP addresses."""

    names: frozenset[str] = frozenset()
    domains: tuple[str, ...] = ()  # each with its leading dot
    any_host: bool = False

    @classmethod
    def of(cls, allowed: Iterable[str], bound: str | None = None) -> HostPolicy:
        """The policy of the names given and the host the server was bound to."""
        given = [*allowed, *([host_name(bound)] if bound else [])]
        return cls(
            names=frozenset(n for n in given if not n.startswith(".") and n != ANY_HOST),
            domains=tuple(n for n in given if n.startswith(".")),
            any_host=ANY_HOST in given,
        )

    def allows(self, host: str) -> bool:
        """Whether a request whose Host header says `host` is one of this server's."""
        name = host_name(host)
        return (
            self.any_host
            or name == "localhost"
            or name.endswith(".localhost")
            or _is_address(name)
            or name in self.names
            or any(name.endswith(domain) or name == domain[1:] for domain in self.domains)
        )

    def refusal(self, host: str) -> str:
        """The message of the 421 for `host`: what happened and how to allow the name."""
        name = host_name(host)
        return (
            f"This server does not answer to the Host {name!r}: a web page may be pointing"
            f" that name at it (DNS rebinding). If you reach the server by this name, allow"
            f" it with --allowed-hosts {name} (or {ENV}={name})."
        )
