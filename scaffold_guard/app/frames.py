"""The frames of one chat turn, as the page receives them (one JSON object per SSE event).

A turn sends `start`, then any of `thinking`, `tool`, `retry` (a transport retry, or the
guardrail's recovery) and `delta` as things happen,
then exactly one of `done` or `error` (none if the client left). `scaffold_guard.app.turn` makes
them, `scaffold_guard.app.api.sse` encodes them; these types are the contract between the two and
the page.

Deliberate choices:
- TypedDicts, not dataclasses: a frame is its JSON, so what is type-checked here is
  exactly what goes on the wire, with no conversion step in between.
- No frame carries model markup: `delta` text has been through the scaffolding filter,
  and a `tool` frame's arguments are the structured call's JSON, never answer text.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

Mode = Literal["grounded", "deflected"]


class StartFrame(TypedDict):
    type: Literal["start"]
    turn: str
    mode: Mode


class ThinkingFrame(TypedDict):
    type: Literal["thinking"]
    text: str


class DeltaFrame(TypedDict):
    type: Literal["delta"]
    text: str


class ToolFrame(TypedDict):
    type: Literal["tool"]
    name: str
    arguments: str
    path: str | None
    ok: bool


class RetryFrame(TypedDict):
    """A transport retry of the same request, announced before it is made."""

    type: Literal["retry"]
    attempt: int
    delay_s: float
    reason: str


class RecoveryFrame(TypedDict):
    """The guardrail's one recovery request is about to go out (the round was scaffolding).

    The page shows a short notice and starts the recovery's thinking apart from the failed
    round's. It carries no text of the failed round: its markup never leaves the server.
    """

    type: Literal["retry"]
    reason: Literal["recovery"]


class DoneFrame(TypedDict):
    """The turn's end. `finish_reason` is the last model request's (`length`: cut by the
    model's token limit, which the page says), or None when the model sent none."""

    type: Literal["done"]
    turn: str
    mode: Mode
    sources: list[str]
    finish_reason: str | None


class ErrorFrame(TypedDict):
    """The turn's end when it failed: `detail` is the app's own copy. `upstream`, only when
    the model service rejected the request (HTTP 4xx), is that service's own message, cut
    to a line and stripped of control characters, for the page to show beside `detail`."""

    type: Literal["error"]
    turn: str
    detail: str
    upstream: NotRequired[str]


Frame = (
    StartFrame
    | ThinkingFrame
    | DeltaFrame
    | ToolFrame
    | RetryFrame
    | RecoveryFrame
    | DoneFrame
    | ErrorFrame
)
