"""The guard proxy's routes for Ollama's native API (Open WebUI's Ollama connection).

`ollama_routes(settings, session)` guard `POST /api/chat` and `POST /api/generate` through
`guard.wire.ollama` (the flow is `guard.relay`'s, the APIs' values `guard.wire.apis`'s), a
markup-only reply getting the one recovery in the same response; every other `/api/...`
request is passed on as it is.

Deliberate choices:
- A streamed answer's head waits for its first line, so an answer whose first line would
  be an error is a 502 with `{"error": ...}` instead: clients handle an error status far
  better than an error line (Open WebUI 0.12 shows an empty answer). A clean stream's first
  line comes at once, so this delays nothing visible.
- Faults look as Ollama's own: a 502 with `{"error": ...}` when unreachable, an error
  status passed on, an error line ending a cut stream so the client raises.
- No keep-alive bytes: NDJSON has no comment line (the client fails on a blank one), and
  Ollama's clients already wait through silences while a model loads.
- A client that leaves closes the upstream response at once.
"""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from guard.http.upstream import (
    METHODS,
    UNREACHABLE,
    GuardedCall,
    GuardSettings,
    UpstreamSession,
    guarded,
    pass_on,
)
from guard.wire.api import Api
from guard.wire.apis import OLLAMA_CHAT, OLLAMA_GENERATE
from servekit.pool import Pool

__all__ = ["ollama_routes"]


def ollama_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    upstream = settings.upstream.rstrip("/")

    async def answer(request: Request, api: Api) -> Response:
        return await guarded(
            request, settings, session, partial(_OllamaCall, api=api), _unreachable
        )

    async def chat(request: Request) -> Response:
        return await answer(request, OLLAMA_CHAT)

    async def generate(request: Request) -> Response:
        return await answer(request, OLLAMA_GENERATE)

    async def other(request: Request) -> Response:
        return await pass_on(session(), upstream, request, await request.body(), _unreachable)

    return [
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/generate", generate, methods=["POST"]),
        Route("/api/{path:path}", other, methods=METHODS),
    ]


class _OllamaCall(GuardedCall):
    """One /api/chat or /api/generate request through the guardrail."""

    def __init__(
        self, session: Pool, url: str, headers: dict[str, str], settings: GuardSettings, api: Api
    ) -> None:
        super().__init__(session, url, headers, settings)
        self.api = api

    def error(self, status: int, message: str, code: str | None = None) -> Response:
        del code  # Ollama's error body has no code
        return _error(status, message)


def _error(status: int, message: str) -> JSONResponse:
    """Ollama's error body, `{"error": message}`."""
    return JSONResponse({"error": message}, status_code=status)


def _unreachable() -> Response:
    return _error(502, UNREACHABLE)
