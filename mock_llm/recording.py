"""What an upstream answered, as flow steps; which flow a request's answer belongs to. Pure.

The recorder (`python -m mock_llm record`, mock_llm/recorder.py) passes every chat
completion through and hands the bytes here, with the time each read arrived; this module
turns them into a `Step` the mock replays the same way:

- A stream (`StreamParser`) is read as SSE: every `data:` event is a chunk, `[DONE]`, an
  in-band `{"error": ...}` event, or a line that is not JSON. Each chunk's delta becomes
  recorded chunks (`RecordedChunk`): a piece of reasoning (`reasoning_content` or
  `reasoning`), of content, or of a tool call's arguments, the first delta of a call being
  its opening (id, name, and whatever arguments it carries, often none). Deltas with no
  text (the role chunk's `""`, a `null` content) carry nothing and are not recorded. Each
  chunk keeps the gap before it: the first one's from the moment the request went
  upstream, the others' from the chunk before. A delta carrying two parts at once
  (reasoning and content, or two tool calls) becomes two chunks, the second with no gap.
- How the stream ended becomes the step's fault: none after `[DONE]`; an `error_event`
  fault after an `{"error": ...}` event; a `cut` fault when it ended without `[DONE]`
  (`abort` when the connection broke, `eof` when the body ended cleanly); a `malformed`
  fault for a `data:` line that is not JSON. Faults fire where they did: `after_chunks`
  counts the frames before them as the mock numbers its own (the role chunk, each recorded
  chunk, the finish chunk, the usage chunk).
- A whole answer (`completion_step`) is a step with the whole texts and no chunks; an
  upstream error status (`error_step`) is an `http` fault with the status, the error
  body's message, type and code, and `Retry-After`.

The mock streams reasoning, then content, then tool calls by index. An upstream that
interleaves them (content after a tool call's arguments) is recorded in that order, each
chunk keeping its arrival time (a chunk moved ahead of later ones gets no gap); the step
says so in `reordered`.

Naming (`request_turn`, `Recording`): a `[[mock:NAME#KEY]]` trigger in the last user
message names the flow NAME; without one, the flow is `rec-` and 12 hex digits of the
SHA-256 of the request's messages up to and including the last user message (canonical
JSON), so every request of one turn (its tool rounds) gets the same name. A request with
no assistant or tool message after its last user message starts a turn, and a new flow
(`NAME-2`, `NAME-3`... when NAME is taken); a later request of a turn adds a step to its
flow. A keyed trigger is a turn by itself, as on the mock: each request with the same
NAME and KEY adds a step to the flow the first one started.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from mock_llm.flows import (
    FINISH_REASONS,
    ChunkPart,
    CutFault,
    ErrorEventFault,
    Fault,
    FinishReason,
    Flow,
    HttpFault,
    MalformedFault,
    ReasoningField,
    RecordedChunk,
    Step,
    ToolCall,
)
from mock_llm.trigger import TriggerError, find_trigger, last_user_text

JSON = dict[str, Any]
_SURROGATE = re.compile("[\ud800-\udfff]")
_FINISH_ALIASES: Mapping[str, FinishReason] = {"function_call": "tool_calls", "eos": "stop"}
_ERROR_TYPES: Mapping[int, str] = {
    401: "invalid_request_error",
    408: "timeout",
    429: "rate_limit_exceeded",
}
MAX_ERROR_MESSAGE_CHARS = 2000
"""The longest upstream error message kept (a proxy's HTML error page can be long)."""


def clean_text(text: str) -> str:
    """`text` as a flow can hold it: a JSON-escaped surrogate pair joined, a lone
    surrogate (which no UTF-8 stream can carry) replaced by U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _finish(value: object) -> FinishReason | None:
    if not isinstance(value, str):
        return None
    if value in FINISH_REASONS:
        return value
    return _FINISH_ALIASES.get(value)


def _reasoning_field(names: set[str]) -> ReasoningField | None:
    if not names:
        return None
    if len(names) > 1:
        return "both"
    return "reasoning" if "reasoning" in names else "reasoning_content"


@dataclass
class _Call:
    """A tool call as its deltas arrive."""

    index: int
    id: str | None
    name: str


@dataclass
class _Piece:
    part: ChunkPart
    text: str
    call: int | None
    at_ms: float


def _rank(piece: _Piece) -> tuple[int, int]:
    return (("reasoning", "content", "call").index(piece.part), piece.call or 0)


@dataclass
class StreamParser:
    """Reads an SSE chat-completion stream as it arrives (`feed`), then builds its step
    (`step`). Times are milliseconds since the request went upstream."""

    _buffer: bytes = b""
    _data: list[str] = field(default_factory=list[str])
    _pieces: list[_Piece] = field(default_factory=list[_Piece])
    _calls: dict[object, _Call] = field(default_factory=dict[object, _Call])
    _reasoning_names: set[str] = field(default_factory=set[str])
    _chunk_seen: bool = False
    _finish_seen: bool = False
    _usage_seen: bool = False
    _finish: FinishReason | None = None
    _malformed: MalformedFault | None = None
    _error: ErrorEventFault | None = None
    done: bool = False
    """`data: [DONE]` arrived."""
    reordered: bool = False
    """The upstream sent parts out of the mock's order (see the module docstring)."""

    @property
    def ended(self) -> bool:
        """Nothing after this is part of the answer: `[DONE]` or an error event came."""
        return self.done or self._error is not None

    def feed(self, data: bytes, at_ms: float) -> None:
        """Bytes of the body as they arrived; events completed by them arrive at `at_ms`."""
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            self._line(raw.removesuffix(b"\r").decode("utf-8", "replace"), at_ms)

    def _line(self, line: str, at_ms: float) -> None:
        if not line:
            if self._data:
                payload, self._data = "\n".join(self._data), []
                self._event(payload, at_ms)
            return
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value.removeprefix(" "))

    def _frames(self) -> int:
        """Frames the mock would have sent by now: role, recorded chunks, finish, usage."""
        return self._chunk_seen + len(self._pieces) + self._finish_seen + self._usage_seen

    def _event(self, payload: str, at_ms: float) -> None:
        if self.ended:
            return
        if payload == "[DONE]":
            self.done = True
            return
        event = read_json(payload)
        if not isinstance(event, dict):
            if self._malformed is None:
                line = clean_text(" ".join(payload.splitlines()))
                self._malformed = MalformedFault(self._frames(), line)
            return
        obj = cast(JSON, event)
        if "error" in obj and not obj.get("choices"):
            message, type_, code = _error_fields(obj, "server_error")
            self._error = ErrorEventFault(self._frames(), message, type_, code)
            return
        self._chunk(obj, at_ms)

    def _chunk(self, obj: JSON, at_ms: float) -> None:
        first = not self._chunk_seen
        self._chunk_seen = True
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices:
            if obj.get("usage") is not None and not first:
                self._usage_seen = True
            return
        choice = _first_choice(cast(list[object], choices))
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._delta(cast(JSON, delta), at_ms)
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = _finish(finish)
            self._finish_seen = True

    def _delta(self, delta: JSON, at_ms: float) -> None:
        named = {
            name: text
            for name in ("reasoning_content", "reasoning")
            if isinstance(text := delta.get(name), str) and text
        }
        if named:  # both fields with one text is one piece (`--reasoning-field both`)
            text = named.get("reasoning_content") or named["reasoning"]
            self._reasoning_names.update(n for n, t in named.items() if t == text)
            self._add("reasoning", text, None, at_ms)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._add("content", content, None, at_ms)
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, item in enumerate(cast(list[object], calls)):
                if isinstance(item, dict):
                    self._tool_call(cast(JSON, item), position, at_ms)

    def _tool_call(self, item: JSON, position: int, at_ms: float) -> None:
        function = item.get("function")
        fn = cast(JSON, function) if isinstance(function, dict) else {}
        key = item.get("index", position)
        key = key if isinstance(key, int) and not isinstance(key, bool) else position
        name = fn.get("name")
        arguments = _arguments(fn.get("arguments"))
        call_id = item.get("id")
        call = self._calls.get(key)
        if call is None:
            call = _Call(
                len(self._calls),
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else "",
            )
            self._calls[key] = call
            self._add("call", arguments, call.index, at_ms)  # the opening, even with no text
            return
        if not call.name and isinstance(name, str):
            call.name = name
        if call.id is None and isinstance(call_id, str):
            call.id = call_id
        if arguments:
            self._add("call", arguments, call.index, at_ms)

    def _add(self, part: ChunkPart, text: str, call: int | None, at_ms: float) -> None:
        piece = _Piece(part, clean_text(text), call, at_ms)
        if self._pieces and _rank(piece) < _rank(self._pieces[-1]):
            self.reordered = True
        self._pieces.append(piece)

    def step(self, broken: bool) -> Step:
        """The recorded step, once the body has ended: `broken` when the connection broke
        before it ended cleanly."""
        pieces = sorted(self._pieces, key=_rank)  # stable: arrival order within a part
        chunks: list[RecordedChunk] = []
        last = 0.0
        for piece in pieces:
            gap = max(0.0, piece.at_ms - last)
            last = max(last, piece.at_ms)
            chunks.append(RecordedChunk(piece.part, piece.text, piece.call, round(gap, 3)))
        calls = sorted(self._calls.values(), key=lambda c: c.index)
        tool_calls = tuple(
            ToolCall(
                clean_text(call.name),
                "".join(c.text for c in chunks if c.part == "call" and c.call == call.index),
                None if call.id is None else clean_text(call.id),
            )
            for call in calls
        )
        fault: Fault | None = self._error
        if fault is None and not self.done:
            fault = CutFault(self._frames(), "abort" if broken else "eof")
        if fault is None:
            fault = self._malformed
        return Step(
            content="".join(c.text for c in chunks if c.part == "content"),
            reasoning="".join(c.text for c in chunks if c.part == "reasoning"),
            tool_calls=tool_calls,
            finish_reason=self._finish,
            reasoning_field=_reasoning_field(self._reasoning_names),
            fault=fault,
            recorded=tuple(chunks),
        )


def _arguments(value: object) -> str:
    """A tool call's arguments as text (a server that sends them as an object: its JSON)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _first_choice(choices: list[object]) -> JSON:
    """Choice 0 (the mock plays one choice; others of `n > 1` are not recorded)."""
    dicts = [cast(JSON, c) for c in choices if isinstance(c, dict)]
    for choice in dicts:
        if choice.get("index", 0) == 0:
            return choice
    return dicts[0] if dicts else {}


def _error_fields(body: object, default_type: str) -> tuple[str, str, str | None]:
    """Message, type and code of an error body: `{"error": {...}}`, `{"error": "text"}`,
    `{"message": ...}` or `{"detail": ...}`."""
    error: object = body
    if isinstance(body, dict):
        error = cast(JSON, body).get("error", body)
    message: object = None
    type_: object = None
    code: object = None
    if isinstance(error, dict):
        fields = cast(JSON, error)
        message = fields.get("message", fields.get("detail"))
        type_, code = fields.get("type"), fields.get("code")
    elif isinstance(error, str):
        message = error
    text = message if isinstance(message, str) else ""
    if not isinstance(message, str) and message is not None:
        text = json.dumps(message, ensure_ascii=False)
    return (
        clean_text(text[:MAX_ERROR_MESSAGE_CHARS]),
        clean_text(type_) if isinstance(type_, str) and type_ else default_type,
        None if code is None or isinstance(code, dict | list) else clean_text(str(code)),
    )


def read_json(data: str | bytes) -> object:
    """The JSON value `data` holds; None when it holds none. Nesting too deep for the parser
    (a body of 100 000 `[`, from a hostile client or upstream) holds none too: it raised
    RecursionError, which escaped the recorder and lost the exchange."""
    try:
        value: object = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value


def completion_step(body: bytes) -> Step:
    """The step of a whole (not streamed) answer: its texts whole, no chunks."""
    obj = read_json(body)
    if not isinstance(obj, dict):
        text = body.decode("utf-8", "replace")
        return Step(fault=MalformedFault(0, clean_text(" ".join(text.splitlines()))))
    answer = cast(JSON, obj)
    choices = answer.get("choices")
    if "error" in answer and not choices:
        message, type_, code = _error_fields(answer, "server_error")
        return Step(fault=ErrorEventFault(0, message, type_, code))
    choice = _first_choice(cast(list[object], choices)) if isinstance(choices, list) else {}
    message = choice.get("message")
    fields = cast(JSON, message) if isinstance(message, dict) else {}
    names = {n for n in ("reasoning_content", "reasoning") if isinstance(fields.get(n), str)}
    names = {n for n in names if fields[n]}
    reasoning = fields.get("reasoning_content") or fields.get("reasoning") or ""
    content = fields.get("content")
    calls: list[ToolCall] = []
    raw_calls = fields.get("tool_calls")
    for item in cast(list[object], raw_calls) if isinstance(raw_calls, list) else []:
        if not isinstance(item, dict):
            continue
        function = cast(JSON, item).get("function")
        fn = cast(JSON, function) if isinstance(function, dict) else {}
        arguments = _arguments(fn.get("arguments"))
        name, call_id = fn.get("name"), cast(JSON, item).get("id")
        calls.append(
            ToolCall(
                clean_text(name if isinstance(name, str) else ""),
                clean_text(arguments),
                clean_text(call_id) if isinstance(call_id, str) else None,
            )
        )
    return Step(
        content=clean_text(content) if isinstance(content, str) else "",
        reasoning=clean_text(reasoning) if isinstance(reasoning, str) else "",
        tool_calls=tuple(calls),
        finish_reason=_finish(choice.get("finish_reason")),
        reasoning_field=_reasoning_field(names),
    )


def error_step(status: int, headers: Mapping[str, str], body: bytes) -> Step:
    """The step of an upstream's error status (400 to 599): an `http` fault."""
    obj = read_json(body)
    if obj is None:
        obj = body.decode("utf-8", "replace").strip()
    default_type = _ERROR_TYPES.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    message, type_, code = _error_fields(obj, default_type)
    return Step(
        fault=HttpFault(
            status,
            message or f"HTTP {status}",
            type_,
            code,
            retry_after(headers.get("retry-after")),
        )
    )


def retry_after(value: str | None) -> float | None:
    """A `Retry-After` in seconds (an HTTP date is not kept: a replay cannot mean it)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


# --- naming ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestTurn:
    """Which turn a request belongs to: the flow `name` its trigger gives (or `rec-HASH`),
    the trigger's `key`, and whether it is the `first` request of its turn."""

    name: str
    key: str | None
    first: bool


def request_turn(body: object) -> RequestTurn:
    """The turn of a chat request body (any JSON; a body without messages hashes `[]`)."""
    raw = cast(JSON, body).get("messages") if isinstance(body, dict) else None
    items = cast(list[object], raw) if isinstance(raw, list) else []
    messages = [cast(JSON, m) for m in items if isinstance(m, dict)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    later = messages[last_user + 1 :]
    first = not any(m.get("role") in ("assistant", "tool", "function") for m in later)
    try:
        trigger = find_trigger(last_user_text(messages))
    except TriggerError:
        trigger = None
    if trigger is not None:
        return RequestTurn(trigger.flow, trigger.key, first)
    canonical = json.dumps(
        messages[: last_user + 1], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
    return RequestTurn(f"rec-{digest[:12]}", None, first)


@dataclass
class Recording:
    """The flows of one recording, in the order their turns started."""

    flows: dict[str, Flow] = field(default_factory=dict[str, Flow])
    _keyed: dict[tuple[str, str], str] = field(default_factory=dict[tuple[str, str], str])
    _latest: dict[str, str] = field(default_factory=dict[str, str])

    def add(self, turn: RequestTurn, step: Step, description: str) -> str:
        """Add the step of a request of `turn`; the name of the flow it went into."""
        name = self._flow_of(turn)
        if name is not None:
            flow = self.flows[name]
            self.flows[name] = replace(flow, steps=(*flow.steps, step))
            return name
        name = self._unique(turn.name)
        self.flows[name] = Flow(name, description, (step,), source="recording")
        if turn.key is not None:
            self._keyed[(turn.name, turn.key)] = name
        else:
            self._latest[turn.name] = name
        return name

    def _flow_of(self, turn: RequestTurn) -> str | None:
        if turn.key is not None:
            return self._keyed.get((turn.name, turn.key))
        if turn.first:
            return None
        return self._latest.get(turn.name)

    def _unique(self, name: str) -> str:
        if name not in self.flows:
            return name
        suffix = 2
        while f"{name}-{suffix}" in self.flows:
            suffix += 1
        return f"{name}-{suffix}"


def description(upstream: str, when_utc: str, model: object, notes: Sequence[str] = ()) -> str:
    """A recorded flow's description: from which upstream, when, and the requested model."""
    what = f" (model {model})" if isinstance(model, str) and model else ""
    text = f"Recorded from {upstream} at {when_utc}{what} by python -m mock_llm record."
    return " ".join([text, *notes])
