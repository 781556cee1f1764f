"""The guard proxy's HTTP side: chat completions through the guardrail, the rest passed on.

`create_app(settings)` is an ASGI app. A chat completion (any path ending in
`/chat/completions`) goes upstream with the client's body and headers and comes back
through `guard.stream.StreamGuard` or `guard.completion`, a markup-only reply getting the
one recovery in the same response. The Responses, Messages and Ollama APIs are routes of
their own; every other request is passed on as it is, streamed both ways.

Deliberate choices:
- Client headers go upstream, Authorization included (hop-by-hop and Host aside); no
  header is ever logged. Every guarded answer is asked for uncompressed.
- An upstream error status is passed on as it is: the client's retry rules apply. The
  proxy retries nothing but the recovery.
- A stream cut after it began ends with the OpenAI in-band error event, so the client sees
  a failure, not a short answer; so do an empty recovery (G3) and an upstream past one of
  the proxy's bounds (a line, an event, MAX_TEXTS choices: `guard.upstream`). A whole
  answer's fault is a 502.
- A client that leaves closes the upstream response at once.
- Upstream silences mid-stream get a `: keep-alive` comment every `keepalive_s`, so no
  proxy in between drops the stream; the upstream's own comments are not passed on.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from guard.completion import CompletionGuard
from guard.messages_route import messages_routes
from guard.ollama_route import ollama_routes
from guard.openai_http import (
    KEEPALIVE,
    OpenAICall,
    error_message,
    next_piece,
    openai_pass_on,
    openai_unreachable,
)
from guard.reply import WholeReply
from guard.responses_route import responses_routes
from guard.stream import StreamGuard
from guard.upstream import (
    METHODS,
    STREAM_FAULTS,
    GuardSettings,
    UpstreamSession,
    fault_message,
    guarded,
)
from guard.wire.openai_errors import error_event, error_json
from guardrail.json_shapes import is_array, objects
from guardrail.policy import MALFORMED_REPLY, with_correction
from servekit.limits import RequestLimits
from servekit.sse import SseDecoder

__all__ = ["MAX_BODY_BYTES", "GuardSettings", "create_app"]

MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest request body (a long conversation with images as data URLs fits)."""
TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")


def create_app(settings: GuardSettings) -> Starlette:
    upstream = settings.upstream.rstrip("/")
    session = UpstreamSession(settings)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        yield
        await session.close()

    async def chat(request: Request) -> Response:
        return await guarded(request, settings, session, _Call, openai_unreachable)

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


class _Call(OpenAICall):
    """One chat completion request through the guardrail: its upstream requests and log."""

    route = "chat"

    # --- streamed ---------------------------------------------------------------------------

    async def stream(
        self, body: dict[str, Any], response: aiohttp.ClientResponse
    ) -> AsyncGenerator[bytes]:
        try:
            async for piece in self.recovered_stream(
                body, response, partial(self._stream_guard, body), self._relayed, self._refused
            ):
                yield piece
        finally:
            self.log(self.route, stream=True)

    def _stream_guard(self, body: dict[str, Any], follows: StreamGuard | None) -> StreamGuard:
        if follows is None:
            return StreamGuard(self.settings.registry_for(body), single_choice=_single_choice(body))
        return StreamGuard(self.settings.registry_for(body), follows=follows)

    async def _refused(self, first: StreamGuard, recovery: aiohttp.ClientResponse | str) -> bytes:
        del first  # the error event is the same whichever reply it ends
        if isinstance(recovery, str):
            return error_event(recovery, 502)
        return error_event(await error_message(recovery), recovery.status)

    async def _relayed(
        self, response: aiohttp.ClientResponse, guard: StreamGuard, round_number: int
    ) -> AsyncGenerator[bytes]:
        """One upstream stream through `guard`, as it comes; ends early, with an error
        event, when the upstream cuts it or goes past a bound (`fault_message`)."""
        decoder, done, ended = SseDecoder(self.settings.max_line_bytes), False, False
        out: list[bytes] = []  # what one upstream read gives: one write to the client
        try:
            while not done and not ended:
                if out:
                    yield b"".join(out)
                    out = []
                try:
                    piece = await next_piece(response, self.settings.keepalive_s)
                    if piece is None:
                        yield KEEPALIVE  # the upstream is silent (a model thinking)
                        continue
                    ended = not piece
                    for event in decoder.feed(piece) if piece else decoder.finish():
                        if event.data.startswith("[DONE]"):
                            done = True
                            break
                        out += guard.chunk(event.data)
                except STREAM_FAULTS as exc:
                    self.failed, ended = True, False
                    yield b"".join([*out, error_event(fault_message(exc), 502)])
                    return
            rest = guard.end(done=done)
            if guard.malformed:
                out.append(error_event(MALFORMED_REPLY, 502))
            else:
                out += rest or ()
            if out:
                yield b"".join(out)
        finally:
            if done or ended:
                response.release()
            else:
                response.close()  # the client left, or the stream broke: the upstream learns
            self.count(guard.stripped_chars, guard.first_span, round_number)

    # --- whole ------------------------------------------------------------------------------

    def whole_guard(self, body: dict[str, Any], follows: WholeReply | None) -> WholeReply:
        if follows is None:
            return CompletionGuard(
                self.settings.registry_for(body), single_choice=_single_choice(body)
            )
        return CompletionGuard(self.settings.registry_for(body), follows=follows)

    def recovery_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return _recovery_body(body)


# --- requests and responses --------------------------------------------------------------------


def _single_choice(body: dict[str, Any]) -> bool:
    n = body.get("n")
    return n is None or n == 1


def _recovery_body(body: dict[str, Any]) -> dict[str, Any]:
    """The one recovery request: the same body, the correction folded in, no tools (G2)."""
    recovery = {k: v for k, v in body.items() if k not in TOOL_FIELDS}
    messages = body.get("messages")
    if is_array(messages):
        recovery["messages"] = with_correction(objects(messages))
    return recovery
