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

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mock_llm.flows.chunking import pieces
from mock_llm.flows.model import ReasoningField, Step, ToolCall
from mock_llm.flows.trigger import message_text
from servekit.json_codec import dumps, parse_object
from servekit.sse import json_event

JSON = dict[str, Any]


@dataclass(frozen=True)
class CompletionMeta:
    """What every chunk of one completion shares."""

    id: str
    created: int
    model: str


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def tool_call_id(meta: CompletionMeta, index: int, call: ToolCall, prefix: str = "call_") -> str:
    """The call's own id, else one from the completion's: `call_mock7_0` (`prefix` `toolu_`
    for the Messages API's `toolu_mock7_0`)."""
    if call.id is not None:
        return call.id
    return f"{prefix}{meta.id.removeprefix('chatcmpl-')}_{index}"


def arguments_object(call: ToolCall) -> JSON:
    """A tool call's arguments as an object, for the formats that send them so (Ollama,
    Gemini): arguments that are not a JSON object go as an empty one."""
    return parse_object(call.arguments or "{}") or {}


def reasoning_fields(text: str, field: ReasoningField) -> JSON:
    if field == "both":
        return {"reasoning_content": text, "reasoning": text}
    return {field: text}


def text_deltas(step: Step, field: ReasoningField) -> list[bytes]:
    """The reasoning then content deltas of a step, JSON-encoded (cached: steps are immutable)."""
    names = ("reasoning_content", "reasoning") if field == "both" else (field,)
    return [
        *_encoded_deltas(pieces(step, "reasoning"), names),
        *_encoded_deltas(pieces(step, "content"), ("content",)),
    ]


@functools.lru_cache(maxsize=512)
def _encoded_deltas(chunks: tuple[str, ...], names: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(dumps(dict.fromkeys(names, piece)) for piece in chunks)


def tool_call_deltas(step: Step, meta: CompletionMeta) -> list[bytes]:
    """Each tool call: an opening delta (index, id, type, name), then argument slices.

    A recorded call's first recorded piece is its opening's `arguments` (often empty), so
    each recorded chunk is one delta."""
    deltas: list[bytes] = []
    for index, call in enumerate(step.tool_calls):
        slices = list(pieces(step, "call", index))
        first = slices.pop(0) if step.recorded and slices else ""
        opening = {
            "index": index,
            "id": tool_call_id(meta, index, call),
            "type": "function",
            "function": {"name": call.name, "arguments": first},
        }
        deltas.append(dumps({"tool_calls": [opening]}))
        deltas += [
            dumps({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in slices
        ]
    return deltas


class ChunkEncoder:
    """SSE frames of one completion's chunks.

    The bytes every chunk of a completion shares (id, created, model, and `usage: null` when
    usage was asked for) are encoded once and spliced around each delta, since a stream of
    one-character chunks would otherwise spend most of its time re-encoding them.
    """

    def __init__(self, meta: CompletionMeta, with_usage: bool) -> None:
        self.meta = meta
        shared = dumps(
            {
                "id": meta.id,
                "object": "chat.completion.chunk",
                "created": meta.created,
                "model": meta.model,
            }
        )
        self._head = b"data: " + shared[:-1] + b',"choices":[{"index":0,"delta":'
        self._tail = b"]" + (b',"usage":null' if with_usage else b"") + b"}\n\n"

    def frame(self, delta: bytes, finish_reason: str | None = None) -> bytes:
        """The frame of a chunk whose delta is the JSON bytes `delta`."""
        finish = b"null" if finish_reason is None else dumps(finish_reason)
        return b"".join(
            (self._head, delta, b',"logprobs":null,"finish_reason":', finish, b"}", self._tail)
        )

    def usage_frame(self, usage: JSON) -> bytes:
        return json_event(
            {
                "id": self.meta.id,
                "object": "chat.completion.chunk",
                "created": self.meta.created,
                "model": self.meta.model,
                "choices": [],
                "usage": usage,
            }
        )


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


def message_tool_calls(step: Step, meta: CompletionMeta) -> list[JSON]:
    """A whole answer's `message.tool_calls`."""
    return [
        {
            "id": tool_call_id(meta, index, call),
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for index, call in enumerate(step.tool_calls)
    ]


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
        message["tool_calls"] = message_tool_calls(step, meta)
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
