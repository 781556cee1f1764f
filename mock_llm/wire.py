"""The OpenAI chat-completions wire format, as the official SDK parses it. Pure functions.

Streams: one `id`/`created` per completion on every chunk, `role` once in the first chunk,
reasoning before content before tool calls, each tool call opening with its `index`, `id`,
`type` and `name` once and then only `index` plus argument slices (the SDK concatenates
every string field, so repeating `role`, `id` or `name` would corrupt its snapshot), a last
chunk with `finish_reason` and an empty delta, the usage chunk with `choices: []` when
`stream_options.include_usage` asks for it, then `data: [DONE]`. A non-streaming response is
assembled from the same step, so the two are equivalent by construction (and by test).

Token counts in `usage` are an estimate (a token per four characters, rounded up): nothing
here pretends to tokenize.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mock_llm.chunking import split
from mock_llm.flows import ReasoningField, Step, ToolCall
from mock_llm.trigger import message_text

JSON = dict[str, Any]
DONE_FRAME = b"data: [DONE]\n\n"


@dataclass(frozen=True)
class CompletionMeta:
    """What every chunk of one completion shares."""

    id: str
    created: int
    model: str


def dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def sse_frame(obj: object) -> bytes:
    """One SSE event carrying `obj` as JSON. JSON never contains a raw newline, so one line."""
    return b"data: " + dumps(obj) + b"\n\n"


def error_body(message: str, type: str, code: str | None = None, param: str | None = None) -> JSON:
    """The OpenAI error body: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def tool_call_id(meta: CompletionMeta, index: int, call: ToolCall) -> str:
    return call.id if call.id is not None else f"call_{meta.id.removeprefix('chatcmpl-')}_{index}"


def reasoning_fields(text: str, field: ReasoningField) -> JSON:
    if field == "both":
        return {"reasoning_content": text, "reasoning": text}
    return {field: text}


def stream_deltas(step: Step, meta: CompletionMeta, field: ReasoningField) -> list[JSON]:
    """The deltas between the role chunk and the finish chunk, in wire order."""
    deltas: list[JSON] = [
        reasoning_fields(piece, field) for piece in split(step.reasoning, step.chunking)
    ]
    deltas += [{"content": piece} for piece in split(step.content, step.chunking)]
    for index, call in enumerate(step.tool_calls):
        opening = {
            "index": index,
            "id": tool_call_id(meta, index, call),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas.append({"tool_calls": [opening]})
        for piece in split(call.arguments, step.chunking):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    return deltas


def chunk(meta: CompletionMeta, delta: JSON, finish_reason: str | None, with_usage: bool) -> JSON:
    body: JSON = {
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    if with_usage:
        body["usage"] = None
    return body


def usage_chunk(meta: CompletionMeta, usage: JSON) -> JSON:
    return {
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [],
        "usage": usage,
    }


def usage(step: Step, messages: Sequence[JSON]) -> JSON:
    prompt = sum(estimate_tokens(message_text(m.get("content"))) for m in messages)
    reasoning = estimate_tokens(step.reasoning)
    completion = (
        reasoning
        + estimate_tokens(step.content)
        + sum(estimate_tokens(c.name + c.arguments) for c in step.tool_calls)
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def completion(
    step: Step, meta: CompletionMeta, field: ReasoningField, messages: Sequence[JSON]
) -> JSON:
    """The non-streaming response: the assembled equivalent of the stream."""
    message: JSON = {
        "role": "assistant",
        "content": step.content if step.content or not step.tool_calls else None,
        "refusal": None,
    }
    if step.reasoning:
        message.update(reasoning_fields(step.reasoning, field))
    if step.tool_calls:
        message["tool_calls"] = [
            {
                "id": tool_call_id(meta, index, call),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(step.tool_calls)
        ]
    return {
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": step.resolved_finish_reason,
            }
        ],
        "usage": usage(step, messages),
    }
