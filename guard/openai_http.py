"""What the guard proxy's OpenAI routes share on the HTTP side (chat completions in
`guard.server`, the Responses API in `guard.responses_route`).

The OpenAI error body (`{"error": {"message", "type", "param", "code"}}`) and the answers
that carry it (a whole answer cut by the upstream, an upstream that cannot be reached), a
whole answer read as the JSON object it should be, an upstream refusal's own message, and a
streamed body read piece by piece with the keep-alive comment that stands in for a silence.
The upstream side every route shares (not only OpenAI's) is `guard.upstream`.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import aiohttp
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from guard.reply import json_object
from guard.upstream import CUT_OFF, UNREACHABLE, pass_on, raw_response, read_whole, relay

KEEPALIVE = b": keep-alive\n\n"
"""An SSE comment, which every reader skips: sent while the upstream is silent mid-stream."""


def error_body(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "guard_error", "param": None, "code": code}}


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


async def read_object(response: aiohttp.ClientResponse) -> tuple[bytes, dict[str, Any]] | Response:
    """A whole answer's bytes and JSON, or the answer when there is none to filter: a 502
    for a body the upstream cut, the body as it came when it is not a JSON object."""
    raw = await read_whole(response)
    if raw is None:
        return error_response(502, CUT_OFF)
    value = json_object(raw)
    if value is None:
        return raw_response(response, raw)
    return raw, value


async def error_message(response: aiohttp.ClientResponse) -> str:
    """The upstream error's own message, if its body says one."""
    raw = await read_whole(response) or b""
    error = (json_object(raw) or {}).get("error")
    message = cast(dict[str, Any], error).get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else f"The model server answered {response.status}."


async def relay_or_cut(response: aiohttp.ClientResponse) -> Response:
    """An upstream answer passed on whole: status, headers and body (a 502 when the
    upstream cut its body)."""
    return await relay(response) or error_response(502, CUT_OFF)


async def openai_pass_on(
    session: aiohttp.ClientSession, upstream: str, request: Request, body: bytes
) -> Response:
    """Any request passed on as it is; the answer streamed back as it comes (a 502 in the
    OpenAI shape when the upstream cannot be reached)."""
    return await pass_on(session, upstream, request, body, lambda: error_response(502, UNREACHABLE))
