"""What a request's head must be before anything reads its body. Pure.

`check_head` raises `HeadRefused` with the status and message a server answers with:
headers over `max_header_bytes` a 431, a target over `max_target_bytes` a 414, a missing,
repeated or malformed Host a 400 (RFC 9112, 3.2), a Host the server does not answer to a
421 (`hosts`: servekit.allowed_hosts, the DNS rebinding defence), a Content-Length over
`max_body_bytes` a 413. One rule for every server here: the ASGI servers apply it in
`servekit.limits.RequestLimits`, the guard's bare-install server (guard/bare) on h11's
parsed head.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from servekit.allowed_hosts import HostPolicy

__all__ = [
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_TARGET_BYTES",
    "LOCAL_ONLY",
    "HeadLimits",
    "HeadRefused",
    "check_head",
]

DEFAULT_MAX_HEADER_BYTES = 32 * 1024
DEFAULT_MAX_TARGET_BYTES = 8 * 1024

LOCAL_ONLY = HostPolicy()
"""Loopback names and IP addresses only: a server given no names of its own."""

_HOST = re.compile(rb"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?")
"""RFC 3986's host (an IP literal in brackets, an IPv4 address or a registered name) and
an optional port."""


@dataclass(frozen=True)
class HeadRefused(Exception):
    """A request a server will not take: the status and the message it answers with."""

    status: int
    message: str


@dataclass(frozen=True)
class HeadLimits:
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_target_bytes: int = DEFAULT_MAX_TARGET_BYTES
    max_body_bytes: int | None = None
    hosts: HostPolicy = LOCAL_ONLY


def check_head(
    limits: HeadLimits, http_version: str, target: bytes, headers: Sequence[tuple[bytes, bytes]]
) -> None:
    """Raise HeadRefused for a head `limits` refuses (`headers` with lowercase names,
    `target` the path and query as sent)."""
    if sum(len(name) + len(value) for name, value in headers) > limits.max_header_bytes:
        raise HeadRefused(431, f"The request headers are over {limits.max_header_bytes} bytes.")
    if len(target) > limits.max_target_bytes:
        raise HeadRefused(
            414, f"The request target (path and query) is over {limits.max_target_bytes} bytes."
        )
    _check_host(http_version, headers, limits.hosts)
    declared = next((value for name, value in headers if name == b"content-length"), b"")
    max_body = limits.max_body_bytes
    if max_body is not None and declared.isdigit() and int(declared) > max_body:
        raise HeadRefused(413, body_too_large(max_body))


def body_too_large(max_bytes: int) -> str:
    return f"The request body is larger than {max_bytes} bytes."


def _check_host(
    http_version: str, headers: Sequence[tuple[bytes, bytes]], policy: HostPolicy
) -> None:
    hosts = [value for name, value in headers if name == b"host"]
    if len(hosts) > 1:
        raise HeadRefused(400, "The request has more than one Host header.")
    if not hosts:
        if http_version == "1.1":
            raise HeadRefused(400, "The request has no Host header; HTTP/1.1 requires one.")
        return
    if _HOST.fullmatch(hosts[0]) is None:
        raise HeadRefused(
            400, "The Host header is not a host name or address with an optional port."
        )
    host = hosts[0].decode("latin-1")
    if not policy.allows(host):
        raise HeadRefused(421, policy.refusal(host))
