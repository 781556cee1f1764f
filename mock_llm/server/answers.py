"""What the mock's routes answer with, and how they read a body: the OpenAI error shape with
its message cut short, a JSON response that writes any string, and a body read within a size
and a time limit.

Every error message is at most `MAX_ERROR_MESSAGE_CHARS` characters (`error_response`): some
name what the client sent (a role, a flow, a query parameter, the path), which may be huge.
`POST /_mock/flows` and `POST /_mock/side-calls` read
their bodies through one helper (`read_bounded`), so both are bounded and refused the same way.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.responses import Response

from mock_llm.server.state import mock_state
from servekit.error_bodies import openai_error_body
from servekit.json_codec import dumps
from servekit.request_body import BodyTimeout, BodyTooLarge, check_declared_length
from servekit.request_body import read_body as read_whole_body

MAX_ERROR_MESSAGE_CHARS = 1000
"""The longest error message: the known flows of a long catalog are cut, never the point."""


def error_response(
    status: int,
    message: str,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> JSONResponse:
    """The OpenAI error shape, its message cut at MAX_ERROR_MESSAGE_CHARS."""
    if len(message) > MAX_ERROR_MESSAGE_CHARS:
        message = message[: MAX_ERROR_MESSAGE_CHARS - 1] + "…"
    if param is not None:
        param = cut(param)
    return JSONResponse(openai_error_body(message, type, code, param), status_code=status)


class JSONResponse(StarletteJSONResponse):
    """Starlette's JSON response, written by `servekit.json_codec.dumps` (a lone surrogate in what a
    client sent, kept in the journal, is written as its escape instead of failing)."""

    def render(self, content: object) -> bytes:
        return dumps(content)


def cut(text: str, limit: int = 200) -> str:
    """`text` as echoed in an error message: at most `limit` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def closing(response: Response) -> Response:
    """`response`, closing the connection after it: the rest of a late body could still
    arrive, and must not be read as the next request."""
    response.headers["connection"] = "close"
    return response


def limit_error(status: int, message: str) -> bytes:
    """A refusal of `RequestLimits` (headers too large) in the OpenAI error shape."""
    del status  # the status line says it; the body is the OpenAI error shape
    return dumps(openai_error_body(message, "invalid_request_error"))


async def read_bounded(request: Request, limit: int, what: str, code: str) -> bytes | Response:
    """The body of a `POST /_mock/...` request, or the answer refusing it: 413 (`code`)
    past `limit` bytes, 408 when it does not arrive in time, a bare 400 for a client gone
    before its body was read."""
    settings = mock_state(request).settings
    try:
        return await read_body(request, limit, settings.body_timeout_s)
    except BodyTooLarge:
        return error_response(413, f"The {what} body is larger than {limit} bytes.", code=code)
    except BodyTimeout as refused:
        return closing(error_response(408, refused.message))
    except ClientDisconnect:
        return Response(status_code=400)


async def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The body, at most `limit` bytes (else BodyTooLarge), whole within `timeout_s` (else
    BodyTimeout); ClientDisconnect for a client gone before its body was whole."""
    check_declared_length(request.headers.get("content-length", ""), limit)
    body, early = await read_whole_body(request.receive, limit, timeout_s)
    if early is not None:
        raise ClientDisconnect
    return body
