"""POST /api/chat: one question in, the turn's frames out as server-sent events.

The body is `{"message": str}` and optionally `"session"`, an id the page makes per tab,
kept on the turn's row for `GET /api/history?session=ID`. It names a conversation; it is
not a credential (the notes chat has no accounts).

Deliberate choice: a plain Starlette route, not a FastAPI one, because FastAPI's
dependency solving and body handling cost every turn measurable CPU. `read_chat_request`
does what a `body: ChatRequest` parameter would (the same 415/422/400 answers, from
scaffold_guard.app.api.validation). It is not in the OpenAPI schema; docs/architecture.md describes
it.
"""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from starlette.exceptions import HTTPException

from scaffold_guard.app.api.deps import open_streams, turn_deps
from scaffold_guard.app.api.sse import EventStream, encode, encode_all
from scaffold_guard.app.api.validation import FASTAPI_PARSE_ERROR, is_json_type
from scaffold_guard.app.errors import SERVER_STOPPING, one_line
from scaffold_guard.app.turn import new_turn_id, run_turn

MAX_MESSAGE_CHARS = 4000
SESSION_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"
router = APIRouter()

SessionId = Annotated[str, Field(pattern=SESSION_PATTERN)]


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(max_length=MAX_MESSAGE_CHARS)
    session: SessionId | None = None

    @field_validator("message")
    @classmethod
    def not_blank(cls, value: str) -> str:
        if not one_line(value):  # nothing visible: white space, zero-width or bidi marks
            raise ValueError("the message is empty")
        if "\x00" in value:
            raise ValueError("the message contains a NUL character")
        return value


_CHAT_REQUEST = TypeAdapter(ChatRequest)


async def read_chat_request(request: Request) -> ChatRequest:
    """The body, read and validated as FastAPI reads a `body: ChatRequest` parameter."""
    raw = await request.body()
    if not raw:
        missing = {"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}
        raise RequestValidationError([missing])
    body: object = raw  # not JSON by its type: validated as bytes, which fails
    if is_json_type(request.headers.get("content-type")):
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as exc:
            error = {
                "type": "json_invalid",
                "loc": ("body", exc.pos),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": exc.msg},
            }
            raise RequestValidationError([error]) from exc
        except Exception as exc:  # invalid UTF-8, nesting past the recursion limit, digits
            raise HTTPException(400, FASTAPI_PARSE_ERROR) from exc
    try:
        return _CHAT_REQUEST.validate_python(body, from_attributes=True)
    except ValidationError as exc:
        errors = [{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]
        raise RequestValidationError(errors) from None


async def chat(request: Request) -> Response:
    body = await read_chat_request(request)
    deps, streams = await turn_deps(request), await open_streams(request)
    turn_id = new_turn_id()

    def server_stopping() -> bytes:
        return encode({"type": "error", "turn": turn_id, "detail": SERVER_STOPPING})

    return EventStream(
        encode_all(run_turn(deps, turn_id, body.message, body.session)),
        keepalive_s=deps.settings.sse_keepalive_s,
        headers={"X-Turn-Id": turn_id, "Cache-Control": "no-store"},
        open_streams=streams,
        last_words=server_stopping,
    )


router.add_route("/api/chat", chat, methods=["POST"])
