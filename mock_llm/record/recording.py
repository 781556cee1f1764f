"""What a chat-completions upstream answered, as flow steps; which flow a request's answer
belongs to. Pure.

The recorder hands the bytes here with each read's arrival time. A stream (`StreamParser`,
read by the SDK's SSE rules) becomes recorded chunks of reasoning, content and tool-call
arguments, and how it ended becomes the step's fault (none after `[DONE]`, `error_event`,
`cut`, `malformed`), firing where it did. A whole answer is `completion_step`; an error
status is `error_step`. `turn_of` and `Recording` name the flows (docs/mock_llm.md).

Deliberate choices:
- A flow with no trigger is named from a hash of the messages up to the last user
  message, so every request of one turn (its tool rounds) lands in the same flow.
- Every API's request is read as chat messages first, so a turn is named the same in each.
- Deltas with no text are not recorded; a delta carrying two parts becomes two chunks,
  the second with no gap.
- Only choice 0 of a stream is read (a choice without an index is 0): the mock plays one,
  and a chunk of other choices only (10,000 of them, say) adds nothing to the recording.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from guardrail.json_shapes import JSONObject, as_object, is_object, objects
from mock_llm.flows.model import (
    ErrorEventFault,
    Flow,
    MalformedFault,
    Step,
)
from mock_llm.flows.trigger import TriggerError, find_trigger, last_user_text
from mock_llm.record.recorded_step import (
    LineReader,
    clean_text,
    error_fields,
    error_step,
    finish_reason,
    function_calls,
    one_line,
    read_json,
    retry_after,
    whole_step,
)
from servekit.openai_chunks import (
    choices_of,
    delta_of,
    first_choice,
    message_of,
    reasoning_texts,
    tool_call_items,
)
from servekit.sse import SseDecoder

__all__ = [
    "Recording",
    "RequestTurn",
    "StreamParser",
    "chat_messages",
    "clean_text",
    "completion_step",
    "description",
    "error_step",
    "read_json",
    "request_turn",
    "retry_after",
    "turn_of",
]


class StreamParser(LineReader):
    """Reads an SSE chat-completion stream as it arrives (`feed`), then builds its step
    (`step`). Times are milliseconds since the request went upstream."""

    def __init__(self) -> None:
        super().__init__()
        self._events = SseDecoder()
        self._chunk_seen = False
        self._finish_seen = False
        self._usage_seen = False
        self._llama_cpp = False

    @property
    def ended(self) -> bool:
        """Nothing after this is part of the answer: `[DONE]` or an error event came."""
        return self.done or self._error is not None

    def _feed(self, data: bytes, at_ms: float) -> None:
        for event in self._events.feed(data):
            self._event(event.data, at_ms)

    def _frames(self) -> int:
        """Frames the mock would have sent by now: role, recorded chunks, finish, usage."""
        return self._chunk_seen + self._pieces.pieces + self._finish_seen + self._usage_seen

    def _event(self, payload: str, at_ms: float) -> None:
        if self.ended or not payload:
            return
        if payload == "[DONE]":
            self.done = True
            return
        obj = as_object(read_json(payload))
        if obj is None:
            self._not_json(payload)
            return
        if "error" in obj and not obj.get("choices"):
            message, type_, code = error_fields(obj, "server_error")
            self._error = ErrorEventFault(self._frames(), message, type_, code)
            return
        self._chunk(obj, at_ms)

    def step(self, broken: bool) -> Step:
        """LineReader's step, in the dialect the upstream spoke."""
        step = super().step(broken)
        return replace(step, dialect="llama.cpp") if self._llama_cpp else step

    def _chunk(self, obj: JSONObject, at_ms: float) -> None:
        first = not self._chunk_seen
        self._chunk_seen = True
        self._llama_cpp = self._llama_cpp or is_llama_cpp(obj)
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices:
            if obj.get("usage") is not None and not first:
                self._usage_seen = True
            return
        choice = next((c for c in choices_of(obj) if c.get("index", 0) == 0), None)
        if choice is None:  # the mock plays one choice of `n > 1`: 0, and no other
            return
        delta = delta_of(choice)
        if delta is not None:
            self._delta(delta, at_ms)
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = finish_reason(finish)
            self._finish_seen = True

    def _delta(self, delta: JSONObject, at_ms: float) -> None:
        named = reasoning_texts(delta)
        if named:  # both fields with one text is one piece (`--reasoning-field both`)
            text = named.get("reasoning_content") or named["reasoning"]
            self._pieces.reasoning_names.update(n for n, t in named.items() if t == text)
            self._pieces.reasoning(text, at_ms)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._pieces.content(content, at_ms)
        for position, item in tool_call_items(delta):
            self._tool_call(item, position, at_ms)

    def _tool_call(self, item: JSONObject, position: int, at_ms: float) -> None:
        key = item.get("index", position)
        key = key if isinstance(key, int) and not isinstance(key, bool) else position
        self._pieces.function_call(key, item, at_ms)

    def _flush(self, at_ms: float) -> None:  # an event the body ended without its blank line
        for event in self._events.finish():
            self._event(event.data, at_ms)


def completion_step(body: bytes) -> Step:
    """The step of a whole (not streamed) answer: its texts whole, no chunks."""
    answer = as_object(read_json(body))
    if answer is None:
        return Step(fault=MalformedFault(0, one_line(body.decode("utf-8", "replace"))))
    choices = answer.get("choices")
    if "error" in answer and not choices:
        message, type_, code = error_fields(answer, "server_error")
        return Step(fault=ErrorEventFault(0, message, type_, code))
    choice = first_choice(choices_of(answer))  # the mock plays one choice of `n > 1`
    fields = message_of(choice) or {}
    names = set(reasoning_texts(fields))
    reasoning = fields.get("reasoning_content") or fields.get("reasoning") or ""
    calls = function_calls(fields.get("tool_calls"))
    finish = finish_reason(choice.get("finish_reason"))
    step = whole_step(fields.get("content"), reasoning, calls, finish, names)
    return replace(step, dialect="llama.cpp") if is_llama_cpp(answer) else step


def is_llama_cpp(obj: JSONObject) -> bool:
    """Whether a chunk or an answer is llama.cpp's llama-server's: it alone sends its
    `timings` counters (mock_llm/wire/llama_cpp.py)."""
    return is_object(obj.get("timings"))


# --- naming ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestTurn:
    """Which turn a request belongs to: the flow `name` its trigger gives (or `rec-HASH`),
    the trigger's `key`, and whether it is the `first` request of its turn."""

    name: str
    key: str | None
    first: bool


def chat_messages(body: object) -> list[JSONObject]:
    """The messages of a chat request body (any JSON; the objects of its `messages` list)."""
    return objects((as_object(body) or {}).get("messages"))


def request_turn(body: object) -> RequestTurn:
    """The turn of a chat request body (any JSON; a body without messages hashes `[]`)."""
    return turn_of(chat_messages(body))


def turn_of(messages: Sequence[Mapping[str, object]]) -> RequestTurn:
    """The turn of a request whose conversation is `messages`, as chat messages."""
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
        list(messages[: last_user + 1]), sort_keys=True, separators=(",", ":"), ensure_ascii=False
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
