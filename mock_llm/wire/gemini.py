"""Google's Gemini API on the wire (`POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent`), as the official google-genai client parses it. Pure functions,
fed by the same steps as the chat format (mock_llm.wire.openai).

An answer is a `GenerateContentResponse` with one candidate; a stream is one response per
piece, the tool calls whole in one chunk, and a last chunk with `finishReason` and the
usage. Two framings: `?alt=sse` (what google-genai asks for) and the default JSON array.

Deliberate choices:
- Both framings copy Google's servers byte-wise (CRLF, the array's `\r\n,\r\n` and
  indentation), so a reader that parses lines rather than JSON fails here as it would there.
- A `functionCall` part has an `id` only when the flow gives one: the Gemini API sends none.
- Errors are Google's body with the google.rpc status name and `details` (`BadRequest`
  naming the field, `RetryInfo` where `Retry-After` is sent too).
"""

from __future__ import annotations

from collections.abc import Sequence

from mock_llm.flows.chunking import pieces, ttft_s, whole_calls_pauses
from mock_llm.flows.model import Step, ToolCall
from mock_llm.wire.openai import JSON, CompletionMeta, arguments_object, usage
from servekit.json_codec import dumps

FINISH_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""The google.rpc status each HTTP status stands for (Google answers an oversized body
with INVALID_ARGUMENT); any other is `UNKNOWN`."""
IN_BAND_STATUS = 500
"""The code of an in-band error: the stream broke inside the server (`INTERNAL`)."""
ARRAY_OPEN = b"["
ARRAY_SEPARATOR = b"\r\n,\r\n"
ARRAY_CLOSE = b"\r\n]"
INDENT = 2


def status_name(status: int) -> str:
    return STATUSES.get(status, "UNKNOWN")


def error_body(
    status: int, message: str, *, field: str | None = None, retry_after: float | None = None
) -> JSON:
    """Google's error body, with a BadRequest naming `field` and a RetryInfo when given."""
    error: JSON = {"code": status, "message": message, "status": status_name(status)}
    details: list[JSON] = []
    if field is not None:
        violation = {"field": field, "description": message}
        details.append(
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}
        )
    if retry_after is not None:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": duration(retry_after),
            }
        )
    if details:
        error["details"] = details
    return {"error": error}


def duration(seconds: float) -> str:
    """A google.protobuf.Duration in JSON: `1s`, `0.25s`."""
    return f"{seconds:.9f}".rstrip("0").rstrip(".") + "s"


def in_band_error(message: str) -> JSON:
    return error_body(IN_BAND_STATUS, message)


def frame(element: JSON, index: int, json_array: bool) -> bytes:
    """Chunk number `index` of a stream in its framing: an SSE event, or an array element
    (the first opens the array)."""
    if not json_array:
        return b"data: " + dumps(element) + b"\r\n\r\n"
    return (ARRAY_SEPARATOR if index else ARRAY_OPEN) + dumps(element, INDENT)


def closing(json_array: bool) -> bytes:
    """What ends a whole stream: the array's `]`, or nothing (SSE has no end marker)."""
    return ARRAY_CLOSE if json_array else b""


def malformed(line: str, json_array: bool) -> bytes:
    """A line that is not JSON, where a chunk could come: an SSE event, or a line of its own
    between two elements (no JSON-array reader gets past it: the stream is one document)."""
    if json_array:
        return b"\r\n" + line.encode() + b"\r\n"
    return b"data: " + line.encode() + b"\r\n\r\n"


def error_frame(message: str, sent: int, json_array: bool) -> bytes:
    """An in-band error after `sent` chunks: the last event, or the last element, which
    closes the array."""
    return frame(in_band_error(message), sent, json_array) + closing(json_array)


def response(step: Step, meta: CompletionMeta, messages: Sequence[JSON]) -> JSON:
    """The whole answer (`generateContent`): the assembled equivalent of the stream."""
    parts: list[JSON] = []
    if step.reasoning:
        parts.append({"text": step.reasoning, "thought": True})
    if step.content or not step.tool_calls:
        parts.append({"text": step.content})
    parts += [function_call(call) for call in step.tool_calls]
    candidate = _candidate({"parts": parts, "role": "model"}, step)
    return _chunk(meta, candidate, usage_metadata(step, messages))


def stream_frames(
    step: Step, meta: CompletionMeta, messages: Sequence[JSON], json_array: bool
) -> list[tuple[float, bytes]]:
    """Every chunk of the stream, framed, with the pause before it, in seconds."""
    parts: list[list[JSON]] = [
        [{"text": piece, "thought": True}] for piece in pieces(step, "reasoning")
    ]
    parts += [[{"text": piece}] for piece in pieces(step, "content")]
    pauses = whole_calls_pauses(step, len(parts))
    if step.tool_calls:
        parts.append([function_call(call) for call in step.tool_calls])
    prompt = _prompt_usage(step, messages)
    elements = [
        _chunk(meta, {"content": {"parts": chunk, "role": "model"}, "index": 0}, prompt)
        for chunk in parts
    ]
    elements.append(
        _chunk(meta, _candidate({"role": "model"}, step), usage_metadata(step, messages))
    )
    pauses.append(0.0 if parts else ttft_s(step))
    return [
        (pause, frame(element, index, json_array))
        for index, (pause, element) in enumerate(zip(pauses, elements, strict=True))
    ]


def function_call(call: ToolCall) -> JSON:
    """A tool call as a `functionCall` part: whole, its arguments as an object."""
    called: JSON = {"name": call.name, "args": arguments_object(call)}
    if call.id is not None:
        called["id"] = call.id
    return {"functionCall": called}


def usage_metadata(step: Step, messages: Sequence[JSON]) -> JSON:
    """The token counts (estimates): the prompt, the answer without its thoughts, the
    thoughts, the total; counts of zero are left out, as the API leaves them out."""
    counts = usage(step, messages)
    prompt = counts["prompt_tokens"]
    thoughts = counts["completion_tokens_details"]["reasoning_tokens"]
    metadata = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": counts["completion_tokens"] - thoughts,
        "totalTokenCount": counts["total_tokens"],
        "thoughtsTokenCount": thoughts,
    }
    kept: JSON = {name: count for name, count in metadata.items() if count}
    if prompt:
        kept["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
    return kept


def _prompt_usage(step: Step, messages: Sequence[JSON]) -> JSON:
    """What a chunk before the last says of usage: the prompt's count, so far the total."""
    prompt = usage(step, messages)["prompt_tokens"]
    return {"promptTokenCount": prompt, "totalTokenCount": prompt} if prompt else {}


def _candidate(content: JSON, step: Step) -> JSON:
    finish = FINISH_REASONS[step.resolved_finish_reason]
    return {"content": content, "finishReason": finish, "index": 0}


def _chunk(meta: CompletionMeta, candidate: JSON, usage_counts: JSON) -> JSON:
    chunk: JSON = {"candidates": [candidate]}
    if usage_counts:
        chunk["usageMetadata"] = usage_counts
    return {**chunk, "modelVersion": meta.model, "responseId": response_id(meta)}


def response_id(meta: CompletionMeta) -> str:
    return meta.id.removeprefix("chatcmpl-")
