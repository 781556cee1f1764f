"""A recorded answer's parts, in whichever wire format they came, gathered into a `Step`. Pure.

Each format's reader tells a `StepBuilder` what each delta carried (reasoning, content, a
tool call's opening or argument slice) and when it arrived; the step's texts are the joins
of its pieces, so a step is format-neutral and replays in every format the mock speaks.
Also the helpers every reader shares (`clean_text`, `read_json`, `error_step`, `LineReader`).

Deliberate choices:
- Gaps are measured from the request going upstream, then from the piece before.
- The mock streams reasoning, content, then tool calls; an upstream that interleaves them
  is recorded in that order, a piece moved ahead getting no gap, and `reordered` says so.
- A line over the line buffer (8 MiB) ends reading with a `problem`; nothing is recorded.
  So do more than `max_chunks` pieces (`MAX_RECORDED_CHUNKS`): what was read is dropped
  then, so a stream that never ends costs bounded memory.
- Bytes that are not UTF-8 are read as U+FFFD, as the SDK reads them (a replay could not
  send them anyway), and `not_utf8` says so for the recorder's log line; a character split
  across reads is read whole.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

from guardrail.json_shapes import JSONObject, as_object, is_object, objects
from mock_llm.flows.model import (
    FINISH_REASONS,
    ChunkPart,
    CutFault,
    ErrorEventFault,
    Fault,
    FinishReason,
    HttpFault,
    MalformedFault,
    ReasoningField,
    RecordedChunk,
    Step,
    ToolCall,
)
from servekit.sse import LineTooLong

_SURROGATE = re.compile("[\ud800-\udfff]")
_FINISH_ALIASES: Mapping[str, FinishReason] = {"function_call": "tool_calls", "eos": "stop"}
_ERROR_TYPES: Mapping[int, str] = {
    401: "invalid_request_error",
    408: "timeout",
    429: "rate_limit_exceeded",
}
MAX_RECORDED_CHUNKS = 100_000
"""The most pieces of a stream read to record it (a long answer has one per token)."""
MAX_ERROR_MESSAGE_CHARS = 2000
"""The longest upstream error message kept (a proxy's HTML error page can be long)."""


def clean_text(text: str) -> str:
    """`text` as a flow can hold it: a JSON-escaped surrogate pair joined, a lone
    surrogate (which no UTF-8 stream can carry) replaced by U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def read_json(data: str | bytes) -> object:
    """The JSON value `data` holds; None when it holds none. Nesting too deep for the parser
    (a body of 100 000 `[`, from a hostile client or upstream) holds none too: it raised
    RecursionError, which escaped the recorder and lost the exchange."""
    try:
        value: object = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value


def finish_reason(value: object) -> FinishReason | None:
    """A finish reason the mock plays (`function_call` read as `tool_calls`, `eos` as
    `stop`), or None for one it does not know."""
    if not isinstance(value, str):
        return None
    if value in FINISH_REASONS:
        return value
    return _FINISH_ALIASES.get(value)


def arguments_text(value: object) -> str:
    """A tool call's arguments as text (a server that sends them as an object: its JSON)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def one_line(text: str) -> str:
    """A malformed line or body as a fault keeps it: its lines joined by spaces."""
    return clean_text(" ".join(text.splitlines()))


def error_fields(body: object, default_type: str) -> tuple[str, str, str | None]:
    """Message, type and code of an error body: `{"error": {...}}`, `{"error": "text"}`,
    `{"message": ...}` or `{"detail": ...}`."""
    error: object = body
    if is_object(body):
        error = body.get("error", body)
    message: object = None
    type_: object = None
    code: object = None
    if is_object(error):
        fields = error
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


def retry_after(value: str | None) -> float | None:
    """A `Retry-After` in seconds (an HTTP date is not kept: a replay cannot mean it)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def error_step(status: int, headers: Mapping[str, str], body: bytes) -> Step:
    """The step of an upstream's error status (400 to 599): an `http` fault. The body may be
    OpenAI's error body, Ollama's `{"error": "text"}` or anything else (kept as text)."""
    obj = read_json(body)
    if obj is None:
        obj = body.decode("utf-8", "replace").strip()
    default_type = _ERROR_TYPES.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    message, type_, code = error_fields(obj, default_type)
    return Step(
        fault=HttpFault(
            status,
            message or f"HTTP {status}",
            type_,
            code,
            retry_after(headers.get("retry-after")),
        )
    )


def reasoning_field(names: set[str]) -> ReasoningField | None:
    """The reasoning field a chat-completions upstream used (None: none, or another format)."""
    if not names:
        return None
    if len(names) > 1:
        return "both"
    return "reasoning" if "reasoning" in names else "reasoning_content"


@dataclass
class _Call:
    """A tool call as its pieces arrive."""

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
class StepBuilder:
    """The pieces of one recorded stream, as a reader finds them (times in milliseconds
    since the request went upstream)."""

    _pieces: list[_Piece] = field(default_factory=list[_Piece])
    _calls: dict[object, _Call] = field(default_factory=dict[object, _Call])
    reasoning_names: set[str] = field(default_factory=set[str])
    """The chat-completions fields the reasoning came in (`reasoning_content`, `reasoning`)."""
    reordered: bool = False
    """The upstream sent parts out of the mock's order (see the module docstring)."""

    @property
    def pieces(self) -> int:
        """How many pieces so far (each is a frame of the mock's chat-completions stream)."""
        return len(self._pieces)

    @property
    def texts(self) -> int:
        """How many pieces of reasoning and content so far."""
        return sum(piece.part != "call" for piece in self._pieces)

    @property
    def calls(self) -> int:
        """How many tool calls so far."""
        return len(self._calls)

    def reasoning(self, text: str, at_ms: float) -> None:
        self._add("reasoning", text, None, at_ms)

    def content(self, text: str, at_ms: float) -> None:
        self._add("content", text, None, at_ms)

    def call(
        self,
        key: object,
        at_ms: float,
        *,
        arguments: str = "",
        call_id: object = None,
        name: object = None,
    ) -> None:
        """A tool call's delta: the first one with `key` opens the call (a piece even with no
        arguments), a later one adds its arguments and fills in an id or name not yet seen."""
        call = self._calls.get(key)
        if call is None:
            call = _Call(
                len(self._calls),
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else "",
            )
            self._calls[key] = call
            self._add("call", arguments, call.index, at_ms)
            return
        if not call.name and isinstance(name, str):
            call.name = name
        if call.id is None and isinstance(call_id, str):
            call.id = call_id
        if arguments:
            self._add("call", arguments, call.index, at_ms)

    def function_call(self, key: object, item: JSONObject, at_ms: float) -> None:
        """A tool call's delta as chat completions and Ollama write it:
        `{"id", "function": {"name", "arguments"}}`."""
        fn = as_object(item.get("function")) or {}
        arguments = arguments_text(fn.get("arguments"))
        self.call(key, at_ms, arguments=arguments, call_id=item.get("id"), name=fn.get("name"))

    def _add(self, part: ChunkPart, text: str, call: int | None, at_ms: float) -> None:
        piece = _Piece(part, clean_text(text), call, at_ms)
        if self._pieces and _rank(piece) < _rank(self._pieces[-1]):
            self.reordered = True
        self._pieces.append(piece)

    def step(self, finish: FinishReason | None, fault: Fault | None) -> Step:
        """The recorded step: the pieces in the mock's order, with their gaps."""
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
        return Step(
            content="".join(c.text for c in chunks if c.part == "content"),
            reasoning="".join(c.text for c in chunks if c.part == "reasoning"),
            tool_calls=tool_calls,
            finish_reason=finish,
            reasoning_field=reasoning_field(self.reasoning_names),
            fault=fault,
            recorded=tuple(chunks),
        )


def whole_step(
    content: object,
    reasoning: object,
    calls: list[ToolCall],
    finish: FinishReason | None,
    names: set[str] | None = None,
) -> Step:
    """The step of a whole (not streamed) answer: its texts whole, no chunks."""
    return Step(
        content=clean_text(content) if isinstance(content, str) else "",
        reasoning=clean_text(reasoning) if isinstance(reasoning, str) else "",
        tool_calls=tuple(calls),
        finish_reason=finish,
        reasoning_field=reasoning_field(names or set()),
    )


def tool_call(name: object, arguments: object, call_id: object) -> ToolCall:
    """A whole tool call as an answer gives it (arguments as text or as an object)."""
    return ToolCall(
        clean_text(name if isinstance(name, str) else ""),
        clean_text(arguments_text(arguments)),
        clean_text(call_id) if isinstance(call_id, str) else None,
    )


def function_calls(value: object) -> list[ToolCall]:
    """The tool calls of a whole answer's message, as chat completions and Ollama write
    them: a list of `{"id", "function": {"name", "arguments"}}` (anything else skipped)."""
    calls: list[ToolCall] = []
    for fields in objects(value):
        fn = as_object(fields.get("function")) or {}
        calls.append(tool_call(fn.get("name"), fn.get("arguments"), fields.get("id")))
    return calls


class LineReader(ABC):
    """A stream reader: the body as it arrives (`feed`), then its step (`step`).

    What every format shares is here: the pieces (`StepBuilder`), the finish reason, and
    how the stream ended, as the step's fault: an in-band error where it came (nothing after
    it is recorded), else a `cut` when the answer's end never came (`abort` when the
    connection broke, `eof` when the body ended cleanly), else the first line that was not
    JSON (`malformed`, the stream going on after it). Each format counts the frames a fault
    fires after (`_frames`), as the mock numbers its own in that format.

    A line longer than the line buffer holds, or more than `max_chunks` pieces, end the
    reading: `problem` says why, the pieces read are dropped, and the
    recorder records nothing of the exchange (the bytes still pass through)."""

    max_chunks = MAX_RECORDED_CHUNKS

    def __init__(self) -> None:
        self.problem: str | None = None
        self.not_utf8 = False
        """Some bytes were not UTF-8 (they are read as U+FFFD)."""
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self.done = False
        """The answer's end arrived (`[DONE]`, Ollama's `done` line, the response's end)."""
        self._pieces = StepBuilder()
        self._finish: FinishReason | None = None
        self._malformed: MalformedFault | None = None
        self._error: ErrorEventFault | None = None
        self._at_ms = 0.0

    @property
    def reordered(self) -> bool:
        """The upstream sent parts out of the mock's order (see the module docstring)."""
        return self._pieces.reordered

    def feed(self, data: bytes, at_ms: float) -> None:
        """Bytes of the body as they arrived; what they complete arrived at `at_ms`."""
        if self.problem is not None:
            return
        self._at_ms = at_ms
        if not self.not_utf8:
            try:
                self._utf8.decode(data)
            except UnicodeDecodeError:
                self.not_utf8 = True
        try:
            self._feed(data, at_ms)
        except LineTooLong as exc:
            self._stop(str(exc))  # an event-stream line is longer than 8388608 bytes
        else:
            if self._pieces.pieces > self.max_chunks:
                self._stop(f"the answer has more than {self.max_chunks} chunks")

    def _stop(self, problem: str) -> None:
        self.problem = problem
        self._pieces = StepBuilder()

    def step(self, broken: bool) -> Step:
        """The recorded step once the body has ended; `broken` when the connection broke
        before it ended cleanly (a line it ended in the middle of is then not read)."""
        if not broken and self.problem is None:
            self._flush(self._at_ms)
        fault: Fault | None = self._error
        if fault is None and not self.done:
            fault = CutFault(self._frames(), "abort" if broken else "eof")
        if fault is None:
            fault = self._malformed
        return self._pieces.step(self._finish, fault)

    def _not_json(self, text: str) -> None:
        """A line that is not a JSON object: the first one is the step's `malformed` fault."""
        if self._malformed is None:
            self._malformed = MalformedFault(self._frames(), one_line(text))

    @abstractmethod
    def _feed(self, data: bytes, at_ms: float) -> None: ...

    @abstractmethod
    def _flush(self, at_ms: float) -> None:
        """Read what the body ended in without its line end (a body that ended cleanly)."""

    @abstractmethod
    def _frames(self) -> int:
        """The frames the mock would have sent by now, in this format."""
