"""What the guard proxy's OpenAI routes share on the HTTP side (chat completions in
`guard.http.server`, the Responses API in `guard.http.responses_route`), and what of it Anthropic's
Messages API route (`guard.http.messages_route`), SSE too, shares with them.

The OpenAI error body (`{"error": {"message", "type", "param", "code"}}`) and the answers
that carry it (a whole answer cut by the upstream, an upstream that cannot be reached);
`OpenAICall`, a guarded request with the OpenAI error body; the keep-alive comment that
stands in for a silence. The upstream side every route shares (not only OpenAI's) is
`guard.http.upstream`; the flow itself, `guard.relay`.
"""

from __future__ import annotations

import aiohttp
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from guard.http.upstream import UNREACHABLE, GuardedCall, pass_on, read_refusal
from guard.wire.openai_errors import error_body, refusal_message
from servekit.pool import Pool

KEEPALIVE = b": keep-alive\n\n"
"""An SSE comment, which every reader skips: sent while the upstream is silent mid-stream."""


def error_response(status: int, message: str, code: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, code), status_code=status)


class OpenAICall(GuardedCall):
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
