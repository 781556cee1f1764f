"""The OpenAI Responses API on the wire (`POST /v1/responses`), as the official openai SDK
parses it. Pure functions, fed by the same steps as the chat format (mock_llm.wire.openai).

A stream is typed SSE with a `sequence_number` and no `[DONE]`: `response.created`,
`response.in_progress`, one output item after another (reasoning, message, function calls),
then `response.completed`, or `response.incomplete` for a `length` or `content_filter`
finish. A whole answer is that last event's `response`; an in-band error is an `error`
event then `response.failed`. Ids derive from the completion's (`resp_mock7`,
`msg_mock7_1`, by output index).
"""

from __future__ import annotations

from collections.abc import Sequence

from mock_llm.flows.chunking import Part, TimedFrames, step_parts, ttft_s
from mock_llm.flows.model import ErrorEventFault, Step
from mock_llm.wire.openai import JSON, CompletionMeta, tool_call_id, usage
from servekit.json_codec import dumps

INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}
"""Finish reasons that end a response `incomplete`, with the reason the API gives."""
FAILED_CODES = ("server_error", "rate_limit_exceeded", "invalid_prompt")
"""The codes a failed response's `error` may carry here (the API's list is closed): another
fault code is kept in the `error` event, and the failed response says `server_error`."""


def event(type: str, sequence_number: int, fields: JSON) -> bytes:
    """One SSE event: its type on the `event:` line and in the data."""
    data = dumps({"type": type, **fields, "sequence_number": sequence_number})
    return b"event: " + type.encode() + b"\ndata: " + data + b"\n\n"


def response_id(meta: CompletionMeta) -> str:
    return "resp_" + _suffix(meta)


def _suffix(meta: CompletionMeta) -> str:
    return meta.id.removeprefix("chatcmpl-")


def response(step: Step, meta: CompletionMeta, messages: Sequence[JSON]) -> JSON:
    """The finished response: the non-streaming answer, and the last event's `response`."""
    reason = INCOMPLETE_REASONS.get(step.resolved_finish_reason)
    return _response(
        meta,
        "completed" if reason is None else "incomplete",
        output_items(step, meta),
        _usage(step, messages),
        incomplete_details=None if reason is None else {"reason": reason},
    )


def output_items(step: Step, meta: CompletionMeta) -> list[JSON]:
    """The step's output items, finished: reasoning, message, function calls."""
    return [item for item, _ in _items(step, meta)]


def stream_events(
    step: Step, meta: CompletionMeta, messages: Sequence[JSON]
) -> list[tuple[float, bytes]]:
    """Every event of the stream with the pause before it, in seconds.

    An item is announced when its first chunk is due (the time to first token before the
    first item), and each further chunk waits its gap: `delay_ms`, or a recorded step's
    recorded gaps (`chunking.step_parts`). A recorded tool call's first chunk is its
    opening: the pause before it goes before the call's `output_item.added`, and its text,
    if any, is the first delta."""
    events = _Events()
    opening = _response(meta, "in_progress", [], None)
    events.emit("response.created", {"response": opening})
    events.emit("response.in_progress", {"response": opening})
    events.pending = ttft_s(step)
    for index, (item, part) in enumerate(_items(step, meta)):
        head = {"output_index": index}
        where = {"item_id": item["id"], **head}
        call = item["type"] == "function_call"
        events.pending += part.opening_pause
        events.emit("response.output_item.added", {**head, "item": _opened(item)})
        if part.opening:
            events.emit("response.function_call_arguments.delta", {**where, "delta": part.opening})
        extra: JSON = {}
        if call:
            kind, at = "function_call_arguments", where
        else:
            [content] = item["content"]
            kind = "reasoning_text" if item["type"] == "reasoning" else "output_text"
            at = {**where, "content_index": 0}
            if kind == "output_text":
                extra = {"logprobs": []}
            events.emit("response.content_part.added", {**at, "part": {**content, "text": ""}})
        for pause, piece in part.deltas:
            events.emit(f"response.{kind}.delta", {**at, "delta": piece, **extra}, pause)
        if call:
            events.emit(f"response.{kind}.done", {**at, "arguments": item["arguments"]})
        else:
            [content] = item["content"]
            events.emit(f"response.{kind}.done", {**at, "text": content["text"], **extra})
            events.emit("response.content_part.done", {**at, "part": content})
        events.emit("response.output_item.done", {**head, "item": item})
    final = response(step, meta, messages)
    ending = "response.completed" if final["status"] == "completed" else "response.incomplete"
    events.emit(ending, {"response": final})
    return events.frames


def failure_events(fault: ErrorEventFault, meta: CompletionMeta, sequence_number: int) -> bytes:
    """An in-band error: the `error` event, then `response.failed`, numbered from
    `sequence_number` (the events already sent)."""
    code = fault.code or fault.type
    error = {"code": code, "message": fault.message, "param": None}
    reason = code if code in FAILED_CODES else "server_error"
    failed_error = {"code": reason, "message": fault.message, "type": fault.type}
    failed = _response(meta, "failed", [], None, error=failed_error)
    return event("error", sequence_number, error) + event(
        "response.failed", sequence_number + 1, {"response": failed}
    )


class _Events(TimedFrames):
    """The frames of a stream being built, numbered in order, each with its pause."""

    def emit(self, type: str, fields: JSON, pause: float = 0.0) -> None:
        self.add(event(type, len(self.frames), fields), pause)


def _items(step: Step, meta: CompletionMeta) -> list[tuple[JSON, Part]]:
    """Each output item, finished, with the part of the step it streams
    (`chunking.step_parts`: its chunks and their pauses); the last item is `incomplete`
    when the response is."""
    suffix = _suffix(meta)
    items: list[tuple[JSON, Part]] = []
    for part in step_parts(step):
        index = len(items)  # the output index
        if part.kind == "reasoning":
            item: JSON = {
                "id": f"rs_{suffix}_{index}",
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": step.reasoning}],
                "status": "completed",
            }
        elif part.kind == "content":
            text: JSON = {
                "type": "output_text",
                "text": step.content,
                "annotations": [],
                "logprobs": [],
            }
            item = {
                "id": f"msg_{suffix}_{index}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        else:
            assert part.call is not None
            call = step.tool_calls[part.call]
            item = {
                "id": f"fc_{suffix}_{index}",
                "type": "function_call",
                "call_id": tool_call_id(meta, part.call, call),
                "name": call.name,
                "arguments": call.arguments,
                "status": "completed",
            }
        items.append((item, part))
    if step.resolved_finish_reason in INCOMPLETE_REASONS:
        items[-1][0]["status"] = "incomplete"  # the item the limit cut short
    return items


def _opened(item: JSON) -> JSON:
    """The item as `response.output_item.added` announces it: in progress, nothing yet."""
    if item["type"] == "function_call":
        return {**item, "arguments": "", "status": "in_progress"}
    return {**item, "content": [], "status": "in_progress"}


def _usage(step: Step, messages: Sequence[JSON]) -> JSON:
    counts = usage(step, messages)
    return {
        "input_tokens": counts["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": counts["completion_tokens"],
        "output_tokens_details": counts["completion_tokens_details"],
        "total_tokens": counts["total_tokens"],
    }


def _response(
    meta: CompletionMeta,
    status: str,
    output: list[JSON],
    usage: JSON | None,
    *,
    incomplete_details: JSON | None = None,
    error: JSON | None = None,
) -> JSON:
    return {
        "id": response_id(meta),
        "object": "response",
        "created_at": meta.created,
        "status": status,
        "error": error,
        "incomplete_details": incomplete_details,
        "instructions": None,
        "max_output_tokens": None,
        "model": meta.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }
