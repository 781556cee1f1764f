"""The security headers every response gets, and `SecurityHeaders`, the ASGI middleware
that adds them. Pure.

`security_headers(policy)` is the set with a server's own Content-Security-Policy (each
server names its own: the notes app's page policy in app/, the mock's data-only one in
mock_llm/), plus `X-Content-Type-Options: nosniff` (a JSON answer that echoes text is never
sniffed as HTML), `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` (the
`frame-ancestors 'none'` of browsers without CSP level 2) and
`Cross-Origin-Opener-Policy: same-origin`.

Deliberate choice: the headers are appended at `http.response.start`, outside every other
middleware of the server, so refusals of `RequestLimits` (413, 431, ...) carry them too.
Only uvicorn's own answer to a request it cannot parse goes out without them: no
application code runs for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SecurityHeaders", "security_headers"]


def security_headers(policy: str) -> tuple[tuple[str, str], ...]:
    """Every security header, as (name, value), with `policy` as the Content-Security-Policy."""
    return (
        ("content-security-policy", policy),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
    )


class SecurityHeaders:
    """Pure ASGI middleware: every HTTP response gets `headers` (see `security_headers`)."""

    def __init__(self, app: ASGIApp, *, headers: Sequence[tuple[str, str]]) -> None:
        self.app = app
        self._raw = [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers
        ]
        self._names = {name for name, _ in self._raw}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                own: list[tuple[bytes, bytes]] = [
                    (name, value)
                    for name, value in message.get("headers", ())
                    if name.lower() not in self._names
                ]
                message["headers"] = own + self._raw
            await send(message)

        await self.app(scope, receive, with_headers)
