"""POST /api/chat: one question in, the turn's frames out as server-sent events.

The body is `{"message": str}`, and optionally `"session"`: an id the page makes for its
tab (letters, digits, `-` and `_`, 8 to 64 of them), kept on the turn's row so
`GET /api/history?session=ID` gives the conversation back after a reload. It names a
conversation, it is not a credential: the notes chat has no accounts.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.api.deps import OpenStreamsDep, TurnDepsDep
from app.api.sse import EventStream, encode, encode_all
from app.errors import SERVER_STOPPING, one_line
from app.turn import new_turn_id, run_turn

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


@router.post("/api/chat")
async def chat(body: ChatRequest, deps: TurnDepsDep, streams: OpenStreamsDep) -> Response:
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
