"""The listening socket of a server started from the command line: loopback by default, a
warning on stderr when told to listen anywhere else, and the URL it serves on.

Shared by `python -m mock_llm`, `python -m app` and `python -m guard`: none of them has a
login, so listening beyond loopback is the user's explicit choice, said out loud.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys

from servekit.allowed_hosts import ENV as ALLOWED_HOSTS_ENV
from servekit.allowed_hosts import parse_allowed_hosts

__all__ = [
    "add_allowed_hosts_option",
    "bind_socket",
    "exposure_warning",
    "is_loopback",
    "listen",
    "socket_url",
]

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback interface only (127.0.0.0/8, ::1,
    localhost). Any other name is not, whatever it resolves to today."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(program: str, host: str, what: str) -> str | None:
    """The warning for listening on `host`, or None when it is loopback."""
    if is_loopback(host):
        return None
    where = host
    if host in ("", "0.0.0.0", "::", "[::]"):
        where = f"every interface ({host or 'all'})"
    return (
        f"{program}: warning: listening on {where}, not on loopback only: "
        f"anyone who can reach this machine can {what}; there is no login. "
        "Use --host 127.0.0.1 unless that is what you want."
    )


def listen(program: str, host: str, port: int, what: str) -> socket.socket | None:
    """The listening socket, after the exposure warning when `host` is not loopback (anyone
    there can `what`); None, with the reason on stderr, when it cannot be bound."""
    warning = exposure_warning(program, host, what)
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    try:
        return bind_socket(host, port)
    except OSError as exc:
        print(f"{program}: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return None


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0 = any free port); OSError if taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def socket_url(sock: socket.socket) -> str:
    """The http:// base URL of a bound socket, e.g. http://127.0.0.1:43121."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _allowed_hosts(text: str) -> tuple[str, ...]:
    try:
        return parse_allowed_hosts(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc} (--allowed-hosts or {ALLOWED_HOSTS_ENV})"
        ) from None


def add_allowed_hosts_option(parser: argparse.ArgumentParser, *, from_env: bool = True) -> None:
    """`--allowed-hosts`: the names the server answers to besides localhost and IP addresses
    (servekit.allowed_hosts), by default those of SG_ALLOWED_HOSTS (`from_env`; else None,
    for a program that reads its environment itself)."""
    parser.add_argument(
        "--allowed-hosts",
        type=_allowed_hosts,
        default=os.environ.get(ALLOWED_HOSTS_ENV, "") if from_env else None,
        metavar="NAMES",
        help="host names this server answers to besides localhost and IP addresses, against"
        " DNS rebinding: comma-separated; .lan = a domain and its names; * = any (default:"
        f" ${ALLOWED_HOSTS_ENV}, else none)",
    )
