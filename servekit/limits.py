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

from collections.abc import Callable
from typing import TYPE_CHECKING

from servekit.allowed_hosts import HostPolicy
from servekit.refusal import send_refusal
from servekit.request_body import BodyRefused, read_body
from servekit.request_head import (
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_TARGET_BYTES,
    LOCAL_ONLY,
    HeadLimits,
    HeadRefused,
    check_head,
)

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_TARGET_BYTES",
    "LOCAL_ONLY",
    "RequestLimits",
]

DEFAULT_BODY_TIMEOUT_S = 10.0
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest request body of a server that names no limit of its own."""

ErrorBody = Callable[[int, str], bytes]
"""The JSON body of a refusal, from its status and message."""


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
        self.limits = HeadLimits(max_header_bytes, max_target_bytes, max_body_bytes, hosts)
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            path: bytes = scope.get("raw_path") or scope.get("path", "").encode()
            target = path + b"?" + query if (query := scope.get("query_string", b"")) else path
            check_head(self.limits, scope.get("http_version", ""), target, scope["headers"])
            if self.max_body_bytes is None and self.body_timeout_s is None:
                await self.app(scope, receive, send)
                return
            body, rest = await read_body(receive, self.max_body_bytes, self.body_timeout_s)
        except (HeadRefused, BodyRefused) as refusal:
            await self._refuse(send, refusal.status, refusal.message)
            return
        await self.app(scope, _replay(body, rest, receive), send)

    async def _refuse(self, send: Send, status: int, message: str) -> None:
        await send_refusal(send, status, self.error_body(status, message), close=True)


def _replay(body: bytes, rest: Message | None, receive: Receive) -> Receive:
    """A `receive` that gives the app the body read ahead, then the real messages."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if rest is not None:
        pending.append(rest)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
