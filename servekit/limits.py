"""What an HTTP request must be before a route sees it: `RequestLimits`, pure ASGI middleware.

Oversized headers are a 431, an oversized target a 414, a missing, repeated or malformed
Host a 400 (RFC 9112, 3.2), a Host the server does not answer to a 421 (`hosts`:
servekit.allowed_hosts, the DNS rebinding defence), a body over `max_body_bytes` a 413
(declared or grown), and a body not whole within `body_timeout_s` a 408.
`error_body(status, message)` renders each refusal in the server's own error shape.

Deliberate choices:
- Bounds are ours, not uvicorn's: its parser takes far more headers and target.
- With a body timeout the app gets the body read whole, so it never waits on a half body;
  the original `receive` takes over after, so the app still hears the client leave.
- `DEFAULT_MAX_BODY_BYTES` is the mock's; the app, proxy and recorder each pass their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servekit.allowed_hosts import HostPolicy
from servekit.refusal import send_refusal
from servekit.request_body import BodyRefused, check_declared_length, read_body

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_TARGET_BYTES",
    "RequestLimits",
]

DEFAULT_MAX_HEADER_BYTES = 32 * 1024
DEFAULT_MAX_TARGET_BYTES = 8 * 1024
DEFAULT_BODY_TIMEOUT_S = 10.0
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest request body of a server that names no limit of its own."""

LOCAL_ONLY = HostPolicy()
"""Loopback names and IP addresses only: a server given no names of its own."""

_HOST = re.compile(rb"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?")
"""RFC 3986's host (an IP literal in brackets, an IPv4 address or a registered name) and
an optional port."""

ErrorBody = Callable[[int, str], bytes]
"""The JSON body of a refusal, from its status and message."""


@dataclass(frozen=True)
class _Refusal(Exception):
    status: int
    message: str


class RequestLimits:
    def __init__(
        self,
        app: ASGIApp,
        *,
        error_body: ErrorBody,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
        max_target_bytes: int = DEFAULT_MAX_TARGET_BYTES,
        max_body_bytes: int | None = None,
        body_timeout_s: float | None = DEFAULT_BODY_TIMEOUT_S,
        hosts: HostPolicy = LOCAL_ONLY,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.error_body = error_body
        self.max_header_bytes = max_header_bytes
        self.max_target_bytes = max_target_bytes
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_headers(scope)
            if self.max_body_bytes is None and self.body_timeout_s is None:
                await self.app(scope, receive, send)
                return
            body, rest = await read_body(receive, self.max_body_bytes, self.body_timeout_s)
        except (_Refusal, BodyRefused) as refusal:
            await self._refuse(send, refusal.status, refusal.message)
            return
        await self.app(scope, _replay(body, rest, receive), send)

    def _check_headers(self, scope: Scope) -> None:
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if sum(len(name) + len(value) for name, value in headers) > self.max_header_bytes:
            raise _Refusal(431, f"The request headers are over {self.max_header_bytes} bytes.")
        path: bytes = scope.get("raw_path") or scope.get("path", "").encode()
        if len(path) + len(scope.get("query_string", b"")) > self.max_target_bytes:
            raise _Refusal(
                414, f"The request target (path and query) is over {self.max_target_bytes} bytes."
            )
        _check_host(scope.get("http_version", ""), headers, self.hosts)
        declared = next((value for name, value in headers if name == b"content-length"), b"")
        check_declared_length(declared, self.max_body_bytes)

    async def _refuse(self, send: Send, status: int, message: str) -> None:
        await send_refusal(send, status, self.error_body(status, message), close=True)


def _check_host(http_version: str, headers: list[tuple[bytes, bytes]], policy: HostPolicy) -> None:
    hosts = [value for name, value in headers if name == b"host"]
    if len(hosts) > 1:
        raise _Refusal(400, "The request has more than one Host header.")
    if not hosts:
        if http_version == "1.1":
            raise _Refusal(400, "The request has no Host header; HTTP/1.1 requires one.")
        return
    if _HOST.fullmatch(hosts[0]) is None:
        raise _Refusal(400, "The Host header is not a host name or address with an optional port.")
    host = hosts[0].decode("latin-1")
    if not policy.allows(host):
        raise _Refusal(421, policy.refusal(host))


def _replay(body: bytes, rest: Message | None, receive: Receive) -> Receive:
    """A `receive` that gives the app the body read ahead, then the real messages."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if rest is not None:
        pending.append(rest)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
