"""The APIs the recorder records, each with how its request names a turn and how its answer
is read. Pure.

`recorded_api(method, path)` says whether a request is recorded (chat completions, Ollama's
`/api/chat` and `/api/generate`, the Responses API), and each API gives its request as chat
messages (for `recording.turn_of`), its stream reader and its whole-answer reader.

Deliberate choices:
- A Responses request is read as the mock reads it (`responses_request`), so a turn's tool
  rounds are later steps of its flow as on chat completions; one the mock would refuse is
  named by the hash of no messages.
- /api/generate has no messages: its `system` and `prompt` stand for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from guardrail.json_shapes import JSONObject, as_object
from mock_llm.flows.model import Step
from mock_llm.record.recorded_step import LineReader, read_json
from mock_llm.record.recording import StreamParser, chat_messages, completion_step
from mock_llm.record.recording_ollama import OllamaStreamParser, ollama_answer_step
from mock_llm.record.recording_responses import ResponsesStreamParser, responses_answer_step
from mock_llm.wire.chat_request import RequestError
from mock_llm.wire.responses_request import parse_responses_request


@dataclass(frozen=True)
class RecordedApi:
    name: str
    stream_type: str
    """The content type of its streams (any other answer is read whole)."""
    reader: Callable[[], LineReader]
    whole: Callable[[bytes], Step]
    messages: Callable[[bytes], list[JSONObject]]
    """The request's conversation as chat messages (any bytes; none when unreadable)."""


def _chat_messages(raw: bytes) -> list[JSONObject]:
    return chat_messages(read_json(raw))


def _generate_messages(raw: bytes) -> list[JSONObject]:
    body = as_object(read_json(raw)) or {}
    system, prompt = body.get("system"), body.get("prompt")
    messages: list[JSONObject] = (
        [{"role": "system", "content": system}] if isinstance(system, str) else []
    )
    return [*messages, {"role": "user", "content": prompt if isinstance(prompt, str) else ""}]


def _responses_messages(raw: bytes) -> list[JSONObject]:
    try:
        return parse_responses_request(raw).messages
    except RequestError:
        return []


CHAT = RecordedApi(
    "chat completions", "text/event-stream", StreamParser, completion_step, _chat_messages
)
OLLAMA_CHAT = RecordedApi(
    "Ollama chat", "application/x-ndjson", OllamaStreamParser, ollama_answer_step, _chat_messages
)
OLLAMA_GENERATE = RecordedApi(
    "Ollama generate",
    "application/x-ndjson",
    partial(OllamaStreamParser, generate=True),
    partial(ollama_answer_step, generate=True),
    _generate_messages,
)
RESPONSES = RecordedApi(
    "Responses",
    "text/event-stream",
    ResponsesStreamParser,
    responses_answer_step,
    _responses_messages,
)
APIS: Mapping[str, RecordedApi] = {
    "/v1/chat/completions": CHAT,
    "/chat/completions": CHAT,
    "/api/chat": OLLAMA_CHAT,
    "/api/generate": OLLAMA_GENERATE,
    "/v1/responses": RESPONSES,
    "/responses": RESPONSES,
}
"""The paths recorded, as the client sends them."""


def recorded_api(method: str, path: str) -> RecordedApi | None:
    """The API of a request the recorder records; None for one it only passes through."""
    return APIS.get(path) if method == "POST" else None
