"""Ollama's native chat API on the wire (`POST /api/chat`), as the official ollama client
parses it. Pure functions, fed by the same steps as the OpenAI format (mock_llm.wire.openai).

A stream is NDJSON, one JSON object per line: `{"model", "created_at", "message":
{"role": "assistant", "content": piece}, "done": false}` per piece, thinking as
`message.thinking`, tool calls whole in one line's `message.tool_calls` with their
arguments as an object (Ollama does not stream arguments), then a last line with
`done: true`, `done_reason` and the counters (`total_duration`, `load_duration`,
`prompt_eval_count`, `prompt_eval_duration`, `eval_count`, `eval_duration`, in
nanoseconds). A whole answer is the assembled message with the same last fields. Errors are
`{"error": message}`, as a body or as a line of a stream.

The counts are estimates, as in `wire.usage` (a token per four characters), and the
durations follow from them at 10 ms per token: nothing here pretends to run a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from mock_llm.flows.chunking import pieces, ttft_s, whole_calls_pauses
from mock_llm.flows.model import Step
from mock_llm.wire.openai import JSON, CompletionMeta, arguments_object, usage
from servekit.json_codec import dumps

MEDIA_TYPE = "application/x-ndjson"
NS_PER_TOKEN = 10_000_000
VERSION = "0.12.0"
"""What `GET /api/version` answers: an Ollama version whose chat API this one follows."""


def line(obj: object) -> bytes:
    return dumps(obj) + b"\n"


def error_body(message: str) -> JSON:
    return {"error": message}


def created_at(meta: CompletionMeta) -> str:
    when = datetime.fromtimestamp(meta.created, tz=UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def chat_lines(
    step: Step, meta: CompletionMeta, messages: Sequence[JSON]
) -> list[tuple[float, bytes]]:
    """Every line of the stream with the pause before it, in seconds.

    A piece of thinking or content is a line; the tool calls go whole in one line, after
    the gaps of all their pieces when the step was recorded."""
    head = {"model": meta.model, "created_at": created_at(meta)}
    messages_out: list[JSON] = [
        {"role": "assistant", "content": "", "thinking": piece}
        for piece in pieces(step, "reasoning")
    ]
    messages_out += [{"role": "assistant", "content": piece} for piece in pieces(step, "content")]
    pauses = whole_calls_pauses(step, len(messages_out))
    if step.tool_calls:
        messages_out.append({"role": "assistant", "content": "", "tool_calls": tool_calls(step)})
    end = {**head, "message": {"role": "assistant", "content": ""}, **_end(step, messages)}
    frames = [
        (pause, line({**head, "message": message, "done": False}))
        for pause, message in zip(pauses, messages_out, strict=True)
    ]
    frames.append((0.0 if messages_out else ttft_s(step), line(end)))
    return frames


def chat_response(step: Step, meta: CompletionMeta, messages: Sequence[JSON]) -> JSON:
    """The non-streaming answer: the assembled equivalent of the stream."""
    message: JSON = {"role": "assistant", "content": step.content}
    if step.reasoning:
        message["thinking"] = step.reasoning
    if step.tool_calls:
        message["tool_calls"] = tool_calls(step)
    return {
        "model": meta.model,
        "created_at": created_at(meta),
        "message": message,
        **_end(step, messages),
    }


def tool_calls(step: Step) -> list[JSON]:
    """The step's tool calls as Ollama sends them: arguments as an object (arguments that
    are not a JSON object are sent as an empty one)."""
    return [
        {"function": {"name": call.name, "arguments": arguments_object(call)}}
        for call in step.tool_calls
    ]


def _end(step: Step, messages: Sequence[JSON]) -> JSON:
    counts = usage(step, messages)
    prompt, completion = counts["prompt_tokens"], counts["completion_tokens"]
    return {
        "done_reason": "length" if step.resolved_finish_reason == "length" else "stop",
        "done": True,
        "total_duration": (prompt + completion) * NS_PER_TOKEN,
        "load_duration": 0,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": prompt * NS_PER_TOKEN,
        "eval_count": completion,
        "eval_duration": completion * NS_PER_TOKEN,
    }


def tags(model: str, meta_created: int) -> JSON:
    """`GET /api/tags`: the one model the mock serves, as an installed Ollama model."""
    when = datetime.fromtimestamp(meta_created, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    details = {
        "parent_model": "",
        "format": "gguf",
        "family": "mock",
        "families": ["mock"],
        "parameter_size": "0B",
        "quantization_level": "none",
    }
    return {
        "models": [
            {
                "name": model,
                "model": model,
                "modified_at": when,
                "size": 0,
                "digest": "0" * 64,
                "details": details,
            }
        ]
    }
