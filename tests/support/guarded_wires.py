"""The guard proxy's four guarded streamed routes as an upstream writes them and a client
reads them, small enough to script a hostile upstream with (issue 27).

A `Wire` writes one route's stream (its opening, a text delta, its clean end) and reads
what the client got back: the answer text, the in-band error that ended the stream, or
the error body of a refusal. Chat completions, the Responses API, Anthropic's Messages
API (SSE) and Ollama's /api/chat (NDJSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TextAt = Callable[[str, int], bytes]  # a text delta of the choice, part or block at an index


@dataclass(frozen=True)
class Wire:
    name: str
    path: str
    content_type: str
    opening: bytes
    text: TextAt
    closing: bytes
    asks: Callable[[str], dict[str, Any]]
    events: Callable[[bytes], list[dict[str, Any]]]
    texts: Callable[[dict[str, Any]], str]

    def text_of(self, body: bytes) -> str:
        """The answer text a client's stream carried."""
        return "".join(self.texts(event) for event in self.events(body))

    def error_of(self, body: bytes) -> str | None:
        """The message of the in-band error that ended a client's stream, if one did."""
        errors = [event for event in self.events(body) if _error(event) is not None]
        return _error(errors[-1]) if errors else None


def refusal_of(body: bytes) -> str:
    """The message of a refusal in any of the routes' error bodies."""
    message = _error(json.loads(body))
    assert message is not None
    return message


def _error(event: dict[str, Any]) -> str | None:
    """An error's message: OpenAI's and Anthropic's `error.message`, Ollama's `error`, the
    Responses API's `error` event's `message`."""
    error = event.get("message") if event.get("type") == "error" else None
    error = error if isinstance(error, str) else event.get("error")
    if isinstance(error, dict):
        error = error.get("message")  # type: ignore[union-attr]
    return error if isinstance(error, str) else None


def _sse(event: dict[str, Any], name: str | None = None) -> bytes:
    head = f"event: {name}\n" if name else ""
    return head.encode() + b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"


def _sse_events(body: bytes) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for line in body.decode().splitlines():
        if line.startswith("data: {"):
            events.append(json.loads(line[6:]))
    return events


def _ndjson_events(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines() if line]


def _messages(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


# --- chat completions ------------------------------------------------------------------------


def _chat_chunk(delta: dict[str, Any], index: int = 0, finish: str | None = None) -> bytes:
    choice = {"index": index, "delta": delta, "finish_reason": finish}
    meta = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return _sse({**meta, "choices": [choice]})


def _chat_text(event: dict[str, Any]) -> str:
    return "".join(c.get("delta", {}).get("content") or "" for c in event.get("choices", []))


CHAT = Wire(
    name="chat",
    path="/v1/chat/completions",
    content_type="text/event-stream",
    opening=_chat_chunk({"role": "assistant"}),
    text=lambda text, index: _chat_chunk({"content": text}, index),
    closing=_chat_chunk({}, finish="stop") + b"data: [DONE]\n\n",
    asks=lambda question: {"model": "m", "messages": _messages(question), "stream": True},
    events=_sse_events,
    texts=_chat_text,
)

# --- the Responses API -----------------------------------------------------------------------

_RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "output": []}
_DELTA = "response.output_text.delta"


def _responses_text(text: str, index: int) -> bytes:
    delta = {"type": _DELTA, "item_id": f"msg_{index}", "output_index": index}
    return _sse({**delta, "content_index": 0, "delta": text}, _DELTA)


RESPONSES = Wire(
    name="responses",
    path="/v1/responses",
    content_type="text/event-stream",
    opening=_sse(
        {"type": "response.created", "response": {**_RESPONSE, "status": "in_progress"}},
        "response.created",
    ),
    text=_responses_text,
    closing=_sse(
        {"type": "response.completed", "response": {**_RESPONSE, "status": "completed"}},
        "response.completed",
    ),
    asks=lambda question: {"model": "m", "input": question, "stream": True},
    events=_sse_events,
    texts=lambda event: event["delta"] if event.get("type") == _DELTA else "",
)

# --- Anthropic's Messages API ----------------------------------------------------------------

_MESSAGE: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
_MESSAGE["content"], _MESSAGE["stop_reason"] = [], None
_MESSAGE["usage"] = {"input_tokens": 1, "output_tokens": 0}


def _block_text(text: str, index: int) -> bytes:
    delta = {"type": "text_delta", "text": text}
    return _sse(
        {"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"
    )


def _messages_text(event: dict[str, Any]) -> str:
    delta = event.get("delta", {})
    return delta.get("text", "") if event.get("type") == "content_block_delta" else ""


MESSAGES = Wire(
    name="messages",
    path="/v1/messages",
    content_type="text/event-stream",
    opening=_sse({"type": "message_start", "message": _MESSAGE}, "message_start")
    + _sse(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        "content_block_start",
    ),
    text=_block_text,
    closing=_sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    + _sse(
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        "message_delta",
    )
    + _sse({"type": "message_stop"}, "message_stop"),
    asks=lambda question: {
        "model": "m",
        "max_tokens": 64,
        "messages": _messages(question),
        "stream": True,
    },
    events=_sse_events,
    texts=_messages_text,
)

# --- Ollama's /api/chat ----------------------------------------------------------------------


def _ollama_line(text: str, *, done: bool = False) -> bytes:
    line: dict[str, Any] = {"model": "m", "created_at": "2026-01-01T00:00:00Z", "done": done}
    line["message"] = {"role": "assistant", "content": text}
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


OLLAMA = Wire(
    name="ollama",
    path="/api/chat",
    content_type="application/x-ndjson",
    opening=_ollama_line(""),
    text=lambda text, index: _ollama_line(text),
    closing=_ollama_line("", done=True),
    asks=lambda question: {"model": "m", "messages": _messages(question)},
    events=_ndjson_events,
    texts=lambda event: event.get("message", {}).get("content", ""),
)

WIRES = (CHAT, RESPONSES, MESSAGES, OLLAMA)
