"""The security headers both servers put on every response, and the ASGI middleware that adds them.

Pure data and one small pure ASGI middleware, `SecurityHeaders`, shared by the mock and the
notes app (as `http_limits` is):

- `PAGE_POLICY` is the notes app's Content-Security-Policy. The page (frontend/index.html)
  loads one stylesheet and one ES module from /static, the module imports the rest (the
  vendored marked and DOMPurify included) from /static, and it talks only to its own
  origin (`fetch("/api/...")`). So everything is `'self'` and nothing is inline: no inline
  script or style, no `eval`, no outside image (a markdown image in a model's answer
  cannot carry notes to another host, faults.md 1b), no plugin, no `<base>` rewrite, and
  no framing.
- `API_POLICY` is for responses that are data, never a page (the mock serves only JSON
  and event streams): nothing may load at all, and nothing may frame it.
- With either: `X-Content-Type-Options: nosniff` (a JSON answer that echoes text is never
  sniffed as HTML), `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` (the
  `frame-ancestors 'none'` of browsers without CSP level 2), and
  `Cross-Origin-Opener-Policy: same-origin` (a window this page opens, or that opens it,
  gets no handle on it).

Deliberate choice: the headers are appended at `http.response.start`, outside every other
middleware of the server, so refusals of `RequestLimits` (413, 431, ...) carry them too.
Only uvicorn's own answer to a request it cannot parse (400 "Invalid HTTP request
received.") goes out without them: no application code runs for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["API_POLICY", "PAGE_POLICY", "SecurityHeaders", "security_headers"]

PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
    " connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self';"
    " frame-ancestors 'none'"
)
"""The Content-Security-Policy of a server that serves the chat page."""

API_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
"""The Content-Security-Policy of a server that serves data only."""


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
