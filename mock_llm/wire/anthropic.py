"""Anthropic's Messages API on the wire (`POST /v1/messages`), as the official anthropic SDK
parses it. Pure functions, fed by the same steps as the chat format (mock_llm.wire.openai).

A stream is typed SSE (no `[DONE]`): `message_start`, a `ping`, one content block after
another (thinking, text, tool_use), then `message_delta` and `message_stop`; a whole
answer is the finished message. Ids derive from the completion's (`msg_mock7`,
`toolu_mock7_0`).

Deliberate choices:
- Tool arguments that are not a JSON object are sent as `input: {}` with no
  `input_json_delta`, so the SDK's stream helper ends with the same input.
- The signature is `mocksig-` and a SHA-256 of the thinking (nothing here can sign), so
  stream and whole message carry the same one.
- A malformed line goes out after an `event: content_block_delta` line: the SDK skips a
  data line without an event name, so a bare one would be no fault at all.
- An error's `type` follows its status unless the fault names another;
  `servekit.error_bodies.anthropic_error_body`, shared with the guard proxy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mock_llm.flows.chunking import Part, TimedFrames, step_parts, ttft_s
from mock_llm.flows.model import ErrorEventFault, HttpFault, Step
from mock_llm.wire.openai import JSON, CompletionMeta, tool_call_id, usage
from servekit.error_bodies import anthropic_error_body
from servekit.json_codec import dumps, parse_object

STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
"""A step's finish reason as the Messages API's `stop_reason`."""
IN_BAND_STATUS = 500
"""The status an in-band error stands for (a whole answer's, and its error type's)."""
MALFORMED_EVENT = "content_block_delta"
"""The event name a malformed line goes out under (see the module docstring)."""


def event(type: str, fields: JSON) -> bytes:
    """One SSE event: its type on the `event:` line and in the data."""
    return b"event: " + type.encode() + b"\ndata: " + dumps({"type": type, **fields}) + b"\n\n"


def message_id(meta: CompletionMeta) -> str:
    return "msg_" + meta.id.removeprefix("chatcmpl-")


def fault_body(fault: HttpFault | ErrorEventFault) -> JSON:
    """A fault's error body: its status's type (an in-band error's as a 500's)."""
    status = fault.status if isinstance(fault, HttpFault) else IN_BAND_STATUS
    return anthropic_error_body(status, fault.message, fault.type)


def error_event(fault: ErrorEventFault) -> bytes:
    """The in-band error: an `error` event carrying the error body."""
    return event("error", {"error": fault_body(fault)["error"]})


def malformed_event(line: str) -> bytes:
    """A line that is not JSON, as the data of an event the SDK decodes."""
    return b"event: " + MALFORMED_EVENT.encode() + b"\ndata: " + line.encode() + b"\n\n"


def signature(thinking: str) -> str:
    return "mocksig-" + hashlib.sha256(thinking.encode("utf-8", "surrogatepass")).hexdigest()


def message(step: Step, meta: CompletionMeta, messages: Sequence[JSON]) -> JSON:
    """The finished message: the non-streaming answer."""
    blocks = [block for block, _ in _blocks(step, meta)]
    return _message(meta, blocks, STOP_REASONS[step.resolved_finish_reason], _usage(step, messages))


def stream_events(
    step: Step, meta: CompletionMeta, messages: Sequence[JSON]
) -> list[tuple[float, bytes]]:
    """Every event of the stream with the pause before it, in seconds.

    A block starts when its first chunk is due (the time to first token before the first
    block), and each further chunk waits its gap (`chunking.step_parts`). A recorded tool
    call's first chunk is its opening: the pause before it goes before the block's
    `content_block_start`, and its text, if any, is the first delta."""
    counts = _usage(step, messages)
    so_far = {k: v for k, v in counts.items() if k != "output_tokens_details"}
    opening = _message(meta, [], None, {**so_far, "output_tokens": 0})  # none yet
    events = TimedFrames()
    events.add(event("message_start", {"message": opening}))
    events.add(event("ping", {}))
    events.pending = ttft_s(step)
    for index, (block, part) in enumerate(_blocks(step, meta)):
        events.pending += part.opening_pause
        events.add(event("content_block_start", {"index": index, "content_block": _opened(block)}))
        kind, name = _DELTAS[block["type"]]
        sends = block["type"] != "tool_use" or _arguments_object(step, part.call) is not None
        pieces = [(0.0, part.opening), *part.deltas] if part.opening else part.deltas
        for pause, piece in pieces:
            if sends:
                delta = {"type": kind, name: piece}
                events.add(event("content_block_delta", {"index": index, "delta": delta}), pause)
            else:  # arguments that are not an object: `input` stays `{}`, the pauses stay
                events.pending += pause
        if block["type"] == "thinking":
            delta = {"type": "signature_delta", "signature": block["signature"]}
            events.add(event("content_block_delta", {"index": index, "delta": delta}))
        events.add(event("content_block_stop", {"index": index}))
    stop = {"stop_reason": STOP_REASONS[step.resolved_finish_reason], "stop_sequence": None}
    events.add(event("message_delta", {"delta": stop, "usage": counts}))
    events.add(event("message_stop", {}))
    return events.frames


_DELTAS = {
    "thinking": ("thinking_delta", "thinking"),
    "text": ("text_delta", "text"),
    "tool_use": ("input_json_delta", "partial_json"),
}
"""Each block type's delta: its type and the field holding the piece."""


def _arguments_object(step: Step, call: int | None) -> JSON | None:
    """Tool call number `call`'s arguments as an object (empty arguments: `{}`), or None
    when they are not one."""
    assert call is not None
    return parse_object(step.tool_calls[call].arguments or "{}")


def _blocks(step: Step, meta: CompletionMeta) -> list[tuple[JSON, Part]]:
    """Each content block, finished, with the part of the step it streams."""
    blocks: list[tuple[JSON, Part]] = []
    for part in step_parts(step):
        if part.kind == "reasoning":
            block: JSON = {
                "type": "thinking",
                "thinking": step.reasoning,
                "signature": signature(step.reasoning),
            }
        elif part.kind == "content":
            block = {"type": "text", "text": step.content}
        else:
            assert part.call is not None
            call = step.tool_calls[part.call]
            block = {
                "type": "tool_use",
                "id": tool_call_id(meta, part.call, call, "toolu_"),
                "name": call.name,
                "input": _arguments_object(step, part.call) or {},
            }
        blocks.append((block, part))
    return blocks


def _opened(block: JSON) -> JSON:
    """The block as `content_block_start` announces it: nothing in it yet."""
    if block["type"] == "thinking":
        return {**block, "thinking": "", "signature": ""}
    if block["type"] == "text":
        return {**block, "text": ""}
    return {**block, "input": {}}


def _usage(step: Step, messages: Sequence[JSON]) -> JSON:
    counts = usage(step, messages)
    return {
        "input_tokens": counts["prompt_tokens"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": counts["completion_tokens"],
        "output_tokens_details": {
            "thinking_tokens": counts["completion_tokens_details"]["reasoning_tokens"]
        },
    }


def _message(
    meta: CompletionMeta, content: list[JSON], stop_reason: str | None, usage: JSON
) -> JSON:
    return {
        "id": message_id(meta),
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }
