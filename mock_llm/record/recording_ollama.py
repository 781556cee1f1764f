"""What an Ollama upstream answered (`POST /api/chat`, `POST /api/generate`), as flow steps.
Pure.

An NDJSON stream is read the way mock_llm.wire.ollama writes it, and how it ended becomes
the step's fault, as for chat completions; a whole answer is the last object.

Deliberate choices:
- Tool calls are recorded whole (Ollama does not stream them).
- `done_reason` `stop` becomes `tool_calls` when the answer called tools (Ollama says
  `stop` either way). Ollama has no `content_filter`, error codes or call ids: a recording
  holds what it said.
- /api/generate's step replays on every format, `response` as the content.
"""

from __future__ import annotations

from guardrail.json_shapes import JSONObject, as_object, is_array
from mock_llm.flows.model import ErrorEventFault, FinishReason, MalformedFault, Step
from mock_llm.record.recorded_step import (
    LineReader,
    error_fields,
    finish_reason,
    function_calls,
    one_line,
    read_json,
    whole_step,
)
from servekit.ndjson import NdjsonLines


def _texts(obj: JSONObject, generate: bool) -> tuple[JSONObject, str, str]:
    """Where a line's texts are (the message, or the line itself for /api/generate), and
    the names of its content and thinking there."""
    if generate:
        return obj, "response", "thinking"
    return as_object(obj.get("message")) or {}, "content", "thinking"


def _finish(done_reason: object, called: bool) -> FinishReason | None:
    finish = finish_reason(done_reason)
    return "tool_calls" if finish == "stop" and called else finish


class OllamaStreamParser(LineReader):
    """Reads an Ollama NDJSON stream as it arrives (`feed`), then builds its step (`step`).
    Times are milliseconds since the request went upstream."""

    def __init__(self, *, generate: bool = False) -> None:
        super().__init__()
        self._generate = generate
        self._lines = NdjsonLines()
        self._calls_line = False

    def _feed(self, data: bytes, at_ms: float) -> None:
        for line in self._lines.feed(data):
            self._line(line, at_ms)

    def _frames(self) -> int:
        """Lines the mock would have sent by now: a piece each, the tool calls, the end."""
        return self._pieces.texts + self._calls_line + self.done

    def _line(self, raw: bytes, at_ms: float) -> None:
        if self.done or self._error is not None or not raw.strip():
            return
        text = raw.decode("utf-8", "replace")
        obj = as_object(read_json(text))
        if obj is None:
            self._not_json(text)
            return
        if "error" in obj:
            message, type_, code = error_fields(obj, "server_error")
            self._error = ErrorEventFault(self._frames(), message, type_, code)
            return
        holder, content_key, thinking_key = _texts(obj, self._generate)
        thinking = holder.get(thinking_key)
        if isinstance(thinking, str) and thinking:
            self._pieces.reasoning(thinking, at_ms)
        content = holder.get(content_key)
        if isinstance(content, str) and content:
            self._pieces.content(content, at_ms)
        calls = holder.get("tool_calls")
        if is_array(calls) and calls:
            self._calls_line = True
            for item in calls:
                self._tool_call(as_object(item) or {}, at_ms)
        if obj.get("done") is True:
            self.done = True
            self._finish = _finish(obj.get("done_reason"), self._pieces.calls > 0)

    def _tool_call(self, item: JSONObject, at_ms: float) -> None:
        self._pieces.function_call(self._pieces.calls, item, at_ms)  # each whole: a new call

    def _flush(self, at_ms: float) -> None:  # a last line the body ended without its end
        for line in self._lines.finish():
            self._line(line, at_ms)


def ollama_answer_step(body: bytes, *, generate: bool = False) -> Step:
    """The step of a whole Ollama answer (`"stream": false`): its texts whole, no chunks."""
    text = body.decode("utf-8", "replace")
    answer = as_object(read_json(body))
    if answer is None:
        return Step(fault=MalformedFault(0, one_line(text)))
    if "error" in answer:
        message, type_, code = error_fields(answer, "server_error")
        return Step(fault=ErrorEventFault(0, message, type_, code))
    holder, content_key, thinking_key = _texts(answer, generate)
    calls = function_calls(holder.get("tool_calls"))
    finish = _finish(answer.get("done_reason"), bool(calls))
    return whole_step(holder.get(content_key), holder.get(thinking_key), calls, finish)
