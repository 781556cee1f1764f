"""Requests from other web sites refused: `SameOrigin`, pure ASGI middleware.

A page the user visits on another site can send requests to a local server (a form's
POST needs no CORS at all). Under `paths`, a request a browser sent for another site is
a 403 in the server's own error body:

- with an `Origin` header, unless it names this server (its host and port are the Host
  header's) or is one of `allowed_origins` (`SG_ALLOWED_ORIGINS`, which also get CORS
  headers from the app);
- without one, when `Sec-Fetch-Site` says `cross-site` (a link or a redirect from
  another site).

Requests from programs (curl, an SDK) send neither header and pass. The scheme is not
compared: behind a TLS proxy the page is https and the request reaches us as http, while
no other site can be served from this host and port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from servekit.refusal import send_refusal

__all__ = ["ORIGINS_ENV", "SameOrigin", "foreign_origin", "parse_origins"]

ORIGINS_ENV = "SG_ALLOWED_ORIGINS"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origins(text: str) -> frozenset[str]:
    """The origins of an allowed-origins value (comma- or space-separated, each
    `scheme://host[:port]`); ValueError naming the first that is not one."""
    origins: set[str] = set()
    for given in text.replace(",", " ").split():
        parts = urlsplit(given)
        if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or parts.path not in ("", "/"):
            raise ValueError(f"allowed origins: {given!r} is not scheme://host[:port]")
        origins.add(f"{parts.scheme}://{parts.netloc}".lower())
    return frozenset(origins)


def _authority(netloc: str, scheme: str) -> tuple[str, int | None] | None:
    """A host[:port]'s name and port (the scheme's default when none is given), or None
    when it is not one."""
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None
    return (parts.hostname or "").rstrip("."), port or _DEFAULT_PORTS.get(scheme)


def foreign_origin(
    origin: str | None, fetch_site: str | None, host: str | None, allowed: frozenset[str]
) -> bool:
    """Whether a request with these headers was sent by a browser for another site."""
    if origin is None:
        return fetch_site == "cross-site"
    origin = origin.strip().lower()
    if origin in allowed:
        return False
    parts = urlsplit(origin)
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or host is None:
        return True  # "null" (a sandboxed frame, a file) or no Host to compare with
    ours = _authority(host, parts.scheme)
    return ours is None or ours != _authority(parts.netloc, parts.scheme)


ErrorBody = Callable[[int, str], bytes]


class SameOrigin:
    def __init__(
        self,
        app: ASGIApp,
        *,
        error_body: ErrorBody,
        paths: Iterable[str] = ("/",),
        allowed_origins: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.error_body = error_body
        self.paths = tuple(paths)
        self.allowed_origins = allowed_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).startswith(self.paths):
            await self.app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]
        }
        origin = headers.get("origin")
        if not foreign_origin(
            origin, headers.get("sec-fetch-site"), headers.get("host"), self.allowed_origins
        ):
            await self.app(scope, receive, send)
            return
        where = origin if origin is not None else "a page on another site"
        message = (
            f"This API answers its own page only; the request came from {where}. To use it"
            f" from another site's page, allow that origin with {ORIGINS_ENV}."
        )
        await send_refusal(send, 403, self.error_body(403, message))
