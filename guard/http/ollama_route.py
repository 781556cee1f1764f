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

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from guard.http.upstream import (
    METHODS,
    UpstreamSession,
    guarded,
    pass_on,
    unreachable,
)
from guard.settings import GuardSettings
from guard.wire.apis import OLLAMA_CHAT, OLLAMA_GENERATE

__all__ = ["ollama_routes"]


def ollama_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    upstream = settings.upstream.rstrip("/")

    async def chat(request: Request) -> Response:
        return await guarded(request, settings, session, OLLAMA_CHAT)  # no keep-alive line

    async def generate(request: Request) -> Response:
        return await guarded(request, settings, session, OLLAMA_GENERATE)

    async def other(request: Request) -> Response:
        body = await request.body()
        return await pass_on(session(), upstream, request, body, unreachable(OLLAMA_CHAT))

    return [
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/generate", generate, methods=["POST"]),
        Route("/api/{path:path}", other, methods=METHODS),
    ]
