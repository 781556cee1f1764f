"""The guard proxy's HTTP side: chat completions through the guardrail, the rest passed on.

`create_app(settings)` is an ASGI app. A chat completion (any path ending in
`/chat/completions`) goes upstream with the client's body and headers and comes back
through `guard.wire.chat_stream.StreamGuard` or `guard.wire.chat_whole`, a markup-only
reply getting the one recovery in the same response. The Responses, Messages and Ollama
APIs are routes of their own; every other request is passed on as it is, streamed both
ways.

Deliberate choices:
- Client headers go upstream, Authorization included (hop-by-hop and Host aside); no
  header is ever logged. Every guarded answer is asked for uncompressed.
- An upstream error status is passed on as it is: the client's retry rules apply. The
  proxy retries nothing but the recovery.
- A stream cut after it began ends with the OpenAI in-band error event, so the client sees
  a failure, not a short answer; so do an empty recovery (G3) and an upstream past one of
  the proxy's bounds (a line, an event, MAX_TEXTS choices: `guard.http.upstream`). A whole
  answer's fault is a 502.
- A client that leaves closes the upstream response at once.
- Upstream silences mid-stream get a `: keep-alive` comment every `keepalive_s`, so no
  proxy in between drops the stream; the upstream's own comments are not passed on.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from guard.http.messages_route import messages_routes
from guard.http.ollama_route import ollama_routes
from guard.http.openai_http import (
    KEEPALIVE,
    openai_pass_on,
)
from guard.http.responses_route import responses_routes
from guard.http.upstream import METHODS, UpstreamSession, guarded
from guard.settings import MAX_BODY_BYTES, GuardSettings
from guard.wire.apis import CHAT_COMPLETIONS
from guard.wire.openai_errors import error_json
from servekit.limits import RequestLimits

__all__ = ["MAX_BODY_BYTES", "GuardSettings", "create_app"]

TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")


def create_app(settings: GuardSettings) -> Starlette:
    upstream = settings.upstream.rstrip("/")
    session = UpstreamSession(settings)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        yield
        await session.close()

    async def chat(request: Request) -> Response:
        return await guarded(request, settings, session, CHAT_COMPLETIONS, KEEPALIVE)

    async def other(request: Request) -> Response:
        return await openai_pass_on(session(), upstream, request, await request.body())

    app = Starlette(
        routes=[
            Route("/{prefix:path}chat/completions", chat, methods=["POST"]),
            *ollama_routes(settings, session),  # /api/chat, /api/generate, the rest of /api/
            *responses_routes(settings, session),  # POST …/responses (the Responses API)
            *messages_routes(settings, session),  # POST …/messages (Anthropic's Messages API)
            Route("/{path:path}", other, methods=METHODS),
        ],
        lifespan=lifespan,
    )
    app.add_middleware(
        RequestLimits,
        error_body=error_json,
        max_body_bytes=MAX_BODY_BYTES,
        hosts=settings.hosts,
    )
    return app
