"""One stream's chunks, read into what the agent uses: thinking and answer text as
`StreamPiece`s as they come, then one `RoundEnd` with the tool calls whole. Pure.

Chunk parts are read by `servekit.openai_chunks`; what is the app's own is here.

Deliberate choices:
- Only choice 0 counts; reasoning sent in both fields with the same text is taken once;
  fields of the wrong type are ignored, as the SDK's lenient models would pass them.
- orjson parses first (far cheaper per token); the standard parser reads what orjson
  refuses, as the SDK would (a lone surrogate escape, NaN).
- One network read's text goes on as one piece per kind (`merged`), nothing held back.
- A stream that ends without a finish reason was cut (a retryable LLMError).
- A reply's text (thinking, answer and tool-call arguments, before the guardrail strips
  anything) is read only up to `max_chars` (`MAX_REPLY_CHARS`): past it the reply is an
  LLMError, so neither the answer a turn keeps nor a model that never stops (an opener
  with no end marker over megabytes) can grow without bound. Choices other than 0 are
  skipped before anything of them is kept, so 10,000 choices cost no memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import orjson

from guardrail.json_shapes import JSONObject, is_object
from scaffold_guard.app.errors import LLMError
from scaffold_guard.app.rag.llm.errors import (
    MSG_CUT,
    MSG_ERROR_EVENT,
    MSG_MALFORMED,
    reply_too_long,
)
from scaffold_guard.app.rag.types import RoundEnd, StreamPiece, ToolCall
from servekit.openai_chunks import choices_of, delta_of, reasoning_texts, tool_call_items
from servekit.sse import SseEvent

MAX_REPLY_CHARS = 4 * 1024 * 1024
"""The most text one reply may carry (thinking, answer, tool-call names, ids and arguments
together)."""
MAX_TOOL_CALLS = 128
"""The most tool calls one reply may carry (a piece with a new index opens one)."""


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


@dataclass
class ChunkAccumulator:
    """What the chunks of one stream said so far: tool-call pieces and the finish reason."""

    calls: dict[int, _PartialCall] = field(default_factory=dict[int, _PartialCall])
    finish_reason: str | None = None
    max_chars: int = MAX_REPLY_CHARS
    chars: int = 0
    """The reply's text so far, counted against `max_chars`."""

    def pieces(self, chunk: Mapping[str, object]) -> list[StreamPiece]:
        """The thinking and answer text of one chunk (choice 0 only); tool-call pieces and
        the finish reason are kept. `choices` may be null (vLLM's usage chunk). Raises an
        LLMError once the reply's text passes `max_chars`."""
        out: list[StreamPiece] = []
        for fields in choices_of(chunk):
            if fields.get("index", 0) != 0:
                continue
            delta = delta_of(fields)
            if delta is not None:
                thinking = _reasoning_text(delta)
                if thinking:
                    self._count(thinking)
                    out.append(StreamPiece("thinking", thinking))
                content = _text(delta.get("content"))
                if content:
                    self._count(content)
                    out.append(StreamPiece("content", content))
                for _, tc in tool_call_items(delta):
                    self._tool_call_piece(tc)
            finish = fields.get("finish_reason")
            if isinstance(finish, str):
                self.finish_reason = finish
        return out

    def read(self, events: list[SseEvent]) -> tuple[list[StreamPiece], bool, LLMError | None]:
        """The pieces of one read's events, whether `[DONE]` came, and the error event or
        unreadable chunk that ended the read early, if one did."""
        pieces: list[StreamPiece] = []
        for event in events:
            if event.data.startswith("[DONE]"):
                return pieces, True, None
            if event.event == "error":
                return pieces, False, LLMError(MSG_ERROR_EVENT, reason="error event in stream")
            try:
                pieces.extend(self.pieces(_chunk(event.data)))
            except LLMError as error:
                return pieces, False, error
        return pieces, False, None

    def _tool_call_piece(self, tc: JSONObject) -> None:
        index = tc.get("index", 0)
        index = index if isinstance(index, int) else 0
        partial = self.calls.get(index)
        if partial is None:
            if len(self.calls) >= MAX_TOOL_CALLS:
                raise reply_too_long(MAX_TOOL_CALLS, "tool calls")
            partial = self.calls[index] = _PartialCall()
        call_id = _text(tc.get("id"))
        if call_id and not partial.id:
            self._count(call_id)
            partial.id = call_id
        function = tc.get("function")
        if is_object(function):
            name = _text(function.get("name"))
            if name and not partial.name:
                self._count(name)
                partial.name = name
            arguments = _text(function.get("arguments"))
            if arguments:
                self._count(arguments)
                partial.arguments.append(arguments)

    def _count(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > self.max_chars:
            raise reply_too_long(self.max_chars, "characters")

    def round_end(self) -> RoundEnd:
        if self.finish_reason is None:
            raise LLMError(MSG_CUT, retryable=True, reason="stream ended early")
        tool_calls = tuple(
            ToolCall(id=p.id or f"call_{index}", name=p.name, arguments="".join(p.arguments))
            for index, p in sorted(self.calls.items())
        )
        return RoundEnd(tool_calls=tool_calls, finish_reason=self.finish_reason)


def _text(value: object) -> str | None:
    """`value` if it is a string, with any lone surrogate (a model can send `"\\ud800"` in its
    JSON) replaced by U+FFFD: such a string could be shown but never stored or logged."""
    if not isinstance(value, str):
        return None
    return value if value.isascii() else _LONE_SURROGATE.sub("\ufffd", value)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _reasoning_text(delta: Mapping[str, object]) -> str:
    if "reasoning_content" not in delta and "reasoning" not in delta:
        return ""  # an answer's delta: the common case
    texts = [_text(t) or "" for t in reasoning_texts(delta).values()]
    if len(texts) == 2 and texts[0] == texts[1]:
        return texts[0]
    return "".join(texts)


def _chunk(data: str) -> JSONObject:
    """One `data:` payload as a chunk; an `error` payload or a line that is not a JSON
    object raises the LLMError the SDK's equivalent would have become.

    orjson reads it (a fifth of the standard parser's time, and a chunk is parsed per
    token); what orjson refuses goes to the standard parser, which reads what the SDK reads
    (a lone surrogate escape, NaN) and refuses the rest, nesting past its depth included
    (a RecursionError there, not a ValueError). orjson reads an integer past 64 bits as a
    float: no field read here holds one."""
    try:
        chunk: object = orjson.loads(data)
    except orjson.JSONDecodeError:
        chunk = _standard_loads(data)
    if not is_object(chunk):
        raise LLMError(MSG_MALFORMED, reason="malformed stream data")
    if chunk.get("error"):
        raise LLMError(MSG_ERROR_EVENT, reason="error event in stream")
    return chunk


def _standard_loads(data: str) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise LLMError(MSG_MALFORMED, reason="malformed stream data") from exc


def merged(pieces: list[StreamPiece]) -> list[StreamPiece]:
    """`pieces` with each run of the same kind joined into one: text that arrived in one
    network read goes on as one piece, so a burst of small chunks costs one frame, not one
    per chunk. Nothing waits for anything: only what is already here is joined."""
    if len(pieces) < 2:
        return pieces
    merged: list[StreamPiece] = []
    run: list[str] = []
    kind = pieces[0].kind
    for piece in pieces:
        if piece.kind != kind:
            merged.append(StreamPiece(kind, "".join(run)))
            run, kind = [], piece.kind
        run.append(piece.text)
    merged.append(StreamPiece(kind, "".join(run)))
    return merged
