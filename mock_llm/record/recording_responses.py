"""What an OpenAI Responses API upstream answered (`POST /v1/responses`), as flow steps. Pure.

A typed SSE stream is read the way mock_llm.wire.responses writes it: reasoning and
output text deltas become pieces, a `function_call` item opens a tool call and its
argument deltas are slices; `response.completed` or `response.incomplete` ends it, and how
the stream ended becomes the step's fault, as for chat completions.

Deliberate choices:
- A text that came only whole (its `.done` with no delta before it) is one piece, so a
  server that streams no deltas still records.
- `after_chunks` counts only the kinds of events the mock sends (`MOCK_EVENTS`), so a
  recording from the mock fires where the mock did; `response.queued` and reasoning
  summary parts are not counted.
- The API's own `error` event has a code only: its type comes from the `response.failed`
  after it, else `server_error`.
"""

from __future__ import annotations

from typing import cast

from guardrail.json_shapes import JSONObject, as_array, as_object, objects, string_field
from mock_llm.flows.model import (
    ErrorEventFault,
    FinishReason,
    MalformedFault,
    Step,
    ToolCall,
)
from mock_llm.record.recorded_step import (
    LineReader,
    error_fields,
    one_line,
    read_json,
    tool_call,
    whole_step,
)
from mock_llm.wire.responses import INCOMPLETE_REASONS
from servekit.sse import SseDecoder

MOCK_EVENTS = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
        "response.incomplete",
    }
)
"""The events mock_llm.wire.responses sends in a stream (its error events aside)."""
_REASONING_DELTAS = ("response.reasoning_text.delta", "response.reasoning_summary_text.delta")
_REASONING_DONE = ("response.reasoning_text.done", "response.reasoning_summary_text.done")
_FINISH_OF_INCOMPLETE: dict[object, FinishReason] = {
    reason: finish for finish, reason in cast(dict[FinishReason, str], INCOMPLETE_REASONS).items()
}
"""The finish reason of each `incomplete_details.reason` the mock writes, looked up by the
reason as it was read (any JSON value)."""


def _finish(response: JSONObject, called: bool) -> FinishReason:
    """The finish reason of a finished response object."""
    if response.get("status") == "incomplete":
        details = as_object(response.get("incomplete_details")) or {}
        return _FINISH_OF_INCOMPLETE.get(details.get("reason"), "length")
    return "tool_calls" if called else "stop"


def _failure(error: object, frames: int) -> ErrorEventFault:
    """The fault of a failed response's `error` (`code`, `message`, and the mock's `type`)."""
    fields = as_object(error) or {}
    message, type_, code = error_fields({"error": fields}, "server_error")
    return ErrorEventFault(frames, message, type_, code)


class ResponsesStreamParser(LineReader):
    """Reads a Responses API event stream as it arrives (`feed`), then builds its step
    (`step`). Times are milliseconds since the request went upstream."""

    def __init__(self) -> None:
        super().__init__()
        self._events = SseDecoder()
        self._count = 0  # the events of the kinds the mock sends
        self._streamed: set[object] = set()  # the items whose text or arguments came as deltas
        self._failed = False

    def _frames(self) -> int:
        return self._count

    def _feed(self, data: bytes, at_ms: float) -> None:
        for event in self._events.feed(data):
            self._event(event.event, event.data, at_ms)

    def _event(self, name: str | None, payload: str, at_ms: float) -> None:
        if self.done or self._failed or not payload:
            return
        obj = as_object(read_json(payload))
        if obj is None:
            if self._error is None:
                self._not_json(payload)
            return
        kind = obj.get("type")
        kind = kind if isinstance(kind, str) else name
        if kind == "response.failed":
            self._failed = True
            response = as_object(obj.get("response")) or {}
            failure = _failure(response.get("error"), self._count)
            self._error = self._error_with_type(failure) if self._error else failure
            return
        if self._error is not None:  # after an error event, only its response.failed counts
            return
        if kind == "error":  # the API's fields are flat; some servers nest them in `error`
            nested = as_object(obj.get("error"))
            fields = nested or {"message": obj.get("message"), "code": obj.get("code")}
            message, type_, code = error_fields({"error": fields}, "server_error")
            self._error = ErrorEventFault(self._count, message, type_, code)
            return
        self._content(kind, obj, at_ms)
        if kind in MOCK_EVENTS:
            self._count += 1

    def _error_with_type(self, failed: ErrorEventFault) -> ErrorEventFault:
        """The error event's fault, its type the failed response's: the mock writes its
        fault's code (or, without one, its type) in the event and the type in the failure."""
        assert self._error is not None
        code = self._error.code
        return ErrorEventFault(
            self._error.after_chunks,
            self._error.message,
            failed.type,
            None if code == failed.type else code,
        )

    def _content(self, kind: str | None, obj: JSONObject, at_ms: float) -> None:
        item_id = _key(obj.get("item_id", obj.get("output_index")))
        if kind in _REASONING_DELTAS or kind == "response.output_text.delta":
            delta = obj.get("delta")
            if isinstance(delta, str) and delta:
                self._streamed.add(item_id)
                if kind == "response.output_text.delta":
                    self._pieces.content(delta, at_ms)
                else:
                    self._pieces.reasoning(delta, at_ms)
        elif kind in _REASONING_DONE or kind == "response.output_text.done":
            text = obj.get("text")
            if item_id not in self._streamed and isinstance(text, str) and text:
                self._streamed.add(item_id)
                if kind == "response.output_text.done":
                    self._pieces.content(text, at_ms)
                else:
                    self._pieces.reasoning(text, at_ms)
        elif kind == "response.output_item.added":
            item = as_object(obj.get("item")) or {}
            if item.get("type") == "function_call":
                key = _key(item.get("id", obj.get("output_index")))
                arguments = item.get("arguments")
                self._call(key, at_ms, arguments, item.get("call_id"), item.get("name"))
        elif kind == "response.function_call_arguments.delta":
            self._call(item_id, at_ms, obj.get("delta"))
        elif kind == "response.function_call_arguments.done":
            if item_id not in self._streamed:
                self._call(item_id, at_ms, obj.get("arguments"))
        elif kind in ("response.completed", "response.incomplete"):
            self.done = True
            response = as_object(obj.get("response")) or {}
            self._finish = _finish(response, self._pieces.calls > 0)

    def _call(
        self,
        key: object,
        at_ms: float,
        arguments: object,
        call_id: object = None,
        name: object = None,
    ) -> None:
        text = arguments if isinstance(arguments, str) else ""
        if text:
            self._streamed.add(key)
        self._pieces.call(key, at_ms, arguments=text, call_id=call_id, name=name)

    def _flush(self, at_ms: float) -> None:  # an event the body ended without its blank line
        for event in self._events.finish():
            self._event(event.event, event.data, at_ms)


def responses_answer_step(body: bytes) -> Step:
    """The step of a whole Responses API answer (`"stream": false`): its texts whole."""
    response = as_object(read_json(body))
    if response is None:
        return Step(fault=MalformedFault(0, one_line(body.decode("utf-8", "replace"))))
    if response.get("status") == "failed" or ("output" not in response and "error" in response):
        return Step(fault=_failure(response.get("error"), 0))
    reasoning: list[str] = []
    content: list[str] = []
    calls: list[ToolCall] = []
    output = response.get("output")
    for item in objects(output):
        if item.get("type") == "function_call":
            calls.append(tool_call(item.get("name"), item.get("arguments"), item.get("call_id")))
        elif item.get("type") == "reasoning":
            reasoning += _texts(item.get("content")) or _texts(item.get("summary"))
        elif item.get("type") == "message":
            content += _texts(item.get("content"))
    finish = _finish(response, bool(calls))
    return whole_step("".join(content), "".join(reasoning), calls, finish)


def _key(value: object) -> str | int | None:
    """An item's id or output index, as the key of its pieces (None for anything else)."""
    return value if isinstance(value, str | int) else None


def _texts(parts: object) -> list[str]:
    """The texts of an item's parts (`output_text`, `reasoning_text`, `summary_text`)."""
    texts: list[str] = []
    for part in as_array(parts):
        text = string_field(part, "text")
        if text is not None:
            texts.append(text)
    return texts
