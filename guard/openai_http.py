"""What the guard proxy's OpenAI routes share on the HTTP side (chat completions in
`guard.server`, the Responses API in `guard.responses_route`), and what of it Anthropic's
Messages API route (`guard.messages_route`), SSE too, shares with them.

The OpenAI error body (`{"error": {"message", "type", "param", "code"}}`) and the answers
that carry it (a whole answer cut by the upstream, an upstream that cannot be reached);
`SseCall`, a guarded request answered in SSE (a `"stream": true` body, a streamed answer),
and `OpenAICall`, one with the OpenAI error body; an upstream refusal's own message (the
OpenAI and the Anthropic error bodies both say it in `error.message`), and a streamed body
read piece by piece with the keep-alive comment that stands in for a silence. The upstream
side every route shares (not only OpenAI's) is `guard.upstream`; the flow of a stream of
typed events (the Responses and the Messages API) is `guard.event_stream`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import aiohttp
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from guard.upstream import UNREACHABLE, GuardedCall, pass_on, read_refusal, response_headers
from guard.wire.openai_errors import error_body, refusal_message
from servekit.pool import Pool
from servekit.streamed import StreamedResponse

KEEPALIVE = b": keep-alive\n\n"
"""An SSE comment, which every reader skips: sent while the upstream is silent mid-stream."""


def error_response(status: int, message: str, code: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, code), status_code=status)


async def next_piece(response: aiohttp.ClientResponse, silence_s: float) -> bytes | None:
    """The next piece of a streamed body (b"" at its end), or None after `silence_s`
    without one; a piece that comes later is still there for the next call."""
    scope = asyncio.timeout(silence_s)
    try:
        async with scope:
            return await response.content.readany()
    except TimeoutError:
        if scope.expired():
            return None
        raise  # a timeout of the connection's own


class SseCall(GuardedCall):
    """A guarded request whose streamed answer is SSE (every route but Ollama's): streamed
    when the body says `"stream": true`, its stream the route's `stream`."""

    def streams(self, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    async def streamed(self, body: dict[str, Any], response: aiohttp.ClientResponse) -> Response:
        return StreamedResponse(
            self.stream(body, response),
            status_code=response.status,
            headers=response_headers(response.headers),
        )

    def stream(
        self, body: dict[str, Any], response: aiohttp.ClientResponse
    ) -> AsyncGenerator[bytes]:
        """What the client's stream carries, from the upstream's (status below 300)."""
        raise NotImplementedError


class OpenAICall(SseCall):
    """A guarded request on an OpenAI route: its faults in the OpenAI error body."""

    def error(self, status: int, message: str, code: str | None = None) -> Response:
        return error_response(status, message, code)


async def error_message(response: aiohttp.ClientResponse) -> str:
    """The upstream error's own message, if its body says one."""
    return refusal_message(await read_refusal(response), response.status)


def openai_unreachable() -> Response:
    """The answer when the upstream cannot be reached: a 502 in the OpenAI shape."""
    return error_response(502, UNREACHABLE)


async def openai_pass_on(session: Pool, upstream: str, request: Request, body: bytes) -> Response:
    """Any request passed on as it is; the answer streamed back as it comes (a 502 in the
    OpenAI shape when the upstream cannot be reached)."""
    return await pass_on(session, upstream, request, body, openai_unreachable)
