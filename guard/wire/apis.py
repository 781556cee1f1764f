"""The APIs the guard guards, as values (`guard.wire.api.Api`): OpenAI's chat completions
and Responses, Anthropic's Messages, and Ollama's chat and generate. Pure.

`api_for(method, path)` is the API a request belongs to, or None for one the guard passes
on untouched (a model list, an embedding, a `GET /v1/responses/{id}`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from guard.wire.api import Api, StreamRound
from guard.wire.chat_stream import StreamGuard
from guard.wire.chat_whole import CompletionGuard
from guard.wire.messages_api import MessageGuard
from guard.wire.messages_api import recovery_body as messages_recovery_body
from guard.wire.messages_stream import MessagesStreamGuard
from guard.wire.ollama import (
    CHAT,
    GENERATE,
    OllamaApi,
    OllamaStreamGuard,
    OllamaWholeGuard,
    own_error_text,
)
from guard.wire.ollama import upstream_error_text as ollama_refusal_message
from guard.wire.openai_errors import error_json, refusal_message
from guard.wire.reply import WholeReply
from guard.wire.responses_api import recovery_body as responses_recovery_body
from guard.wire.responses_stream import ResponsesStreamGuard
from guard.wire.responses_whole import ResponseGuard
from guard.wire.rounds import ChatRound, EventGuard, EventRound, NdjsonRound
from guardrail.json_shapes import is_array, objects
from guardrail.patterns import Registry
from guardrail.policy import with_correction
from servekit.error_bodies import anthropic_error_body

TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")
"""What a chat completion's recovery request goes without (G2)."""


def post_to(suffix: str, *, exact: bool = False) -> Callable[[str, str], bool]:
    """Whether a request is a POST to a path ending with `suffix` (or equal to it)."""

    def owns(method: str, path: str) -> bool:
        return method == "POST" and (path == suffix if exact else path.endswith(suffix))

    return owns


def asks_for_stream(body: dict[str, Any]) -> bool:
    return bool(body.get("stream"))


# --- chat completions ------------------------------------------------------------------------


def single_choice(body: dict[str, Any]) -> bool:
    n = body.get("n")
    return n is None or n == 1


def chat_recovery_body(body: dict[str, Any]) -> dict[str, Any]:
    """The one recovery request: the same body, the correction folded in, no tools (G2)."""
    recovery = {k: v for k, v in body.items() if k not in TOOL_FIELDS}
    messages = body.get("messages")
    if is_array(messages):
        recovery["messages"] = with_correction(objects(messages))
    return recovery


def _chat_round(registry: Registry, body: dict[str, Any], follows: StreamRound | None) -> ChatRound:
    if isinstance(follows, ChatRound):
        return ChatRound(StreamGuard(registry, follows=follows.guard))
    return ChatRound(StreamGuard(registry, single_choice=single_choice(body)))


def _completion_guard(
    registry: Registry, body: dict[str, Any], follows: WholeReply | None
) -> WholeReply:
    if follows is None:
        return CompletionGuard(registry, single_choice=single_choice(body))
    return CompletionGuard(registry, follows=follows)


CHAT_COMPLETIONS = Api(
    name="chat",
    framing="sse",
    owns=post_to("chat/completions"),
    streams=asks_for_stream,
    stream_round=_chat_round,
    whole_guard=_completion_guard,
    recovery_body=chat_recovery_body,
    error_body=error_json,
    refusal_message=refusal_message,
)

# --- the Responses API -----------------------------------------------------------------------


def responses_failure(guard: EventGuard, message: str, status: int) -> bytes:
    """The Responses stream's in-band failure: an `error` event, then `response.failed`."""
    assert isinstance(guard, ResponsesStreamGuard)
    failed_code = "rate_limit_exceeded" if status == 429 else "server_error"
    return b"".join(guard.fail(message, f"upstream_{status}", failed_code))


def event_round(
    kind: Callable[..., EventGuard], failure: Callable[[EventGuard, str, int], bytes]
) -> Callable[[Registry, dict[str, Any], StreamRound | None], EventRound]:
    """The rounds of a typed-event API whose stream guard is `kind`."""

    def stream_round(
        registry: Registry, body: dict[str, Any], follows: StreamRound | None
    ) -> EventRound:
        del body  # the events say all a guard needs
        first = follows.guard if isinstance(follows, EventRound) else None
        return EventRound(kind(registry, follows=first), failure)

    return stream_round


RESPONSES = Api(
    name="responses",
    framing="sse",
    owns=post_to("responses"),
    streams=asks_for_stream,
    stream_round=event_round(ResponsesStreamGuard, responses_failure),
    whole_guard=lambda registry, _body, follows: ResponseGuard(registry, follows=follows),
    recovery_body=responses_recovery_body,
    error_body=error_json,
    refusal_message=refusal_message,
)

# --- Anthropic's Messages API ----------------------------------------------------------------


def messages_failure(guard: EventGuard, message: str, status: int) -> bytes:
    """The Messages stream's in-band failure: Anthropic's `error` event."""
    assert isinstance(guard, MessagesStreamGuard)
    return b"".join(guard.fail(message, status))


def _anthropic_error(status: int, message: str, code: str | None) -> bytes:
    del code  # Anthropic's error body has its type, which the status gives
    return json.dumps(anthropic_error_body(status, message)).encode()


def _owns_messages(method: str, path: str) -> bool:
    return method == "POST" and (path == "/messages" or path.endswith("/messages"))


MESSAGES = Api(
    name="messages",
    framing="sse",
    owns=_owns_messages,
    streams=asks_for_stream,
    stream_round=event_round(MessagesStreamGuard, messages_failure),
    whole_guard=lambda registry, _body, follows: MessageGuard(registry, follows=follows),
    recovery_body=messages_recovery_body,
    error_body=_anthropic_error,
    refusal_message=refusal_message,
)

# --- Ollama's chat and generate --------------------------------------------------------------


def _ollama_error(status: int, message: str, code: str | None) -> bytes:
    del status, code  # Ollama's error body is `{"error": message}` alone
    return json.dumps({"error": message}).encode()


def ollama(api: OllamaApi) -> Api:
    """Ollama's `/api/<name>` endpoint `api` (it streams unless told not to)."""

    def stream_round(
        registry: Registry, body: dict[str, Any], follows: StreamRound | None
    ) -> NdjsonRound:
        first = follows.guard if isinstance(follows, NdjsonRound) else None
        return NdjsonRound(OllamaStreamGuard(registry, api=api, follows=first))

    def whole_guard(
        registry: Registry, body: dict[str, Any], follows: WholeReply | None
    ) -> WholeReply:
        return OllamaWholeGuard(registry, api=api, follows=follows)

    return Api(
        name=f"ollama-{api.name}",
        framing="ndjson",
        owns=post_to(f"/api/{api.name}", exact=True),
        streams=lambda body: body.get("stream") is not False,
        stream_round=stream_round,
        whole_guard=whole_guard,
        recovery_body=api.recovery_body,
        error_body=_ollama_error,
        refusal_message=ollama_refusal_message,
        first_error=own_error_text,
    )


OLLAMA_CHAT = ollama(CHAT)
OLLAMA_GENERATE = ollama(GENERATE)

APIS: tuple[Api, ...] = (CHAT_COMPLETIONS, RESPONSES, MESSAGES, OLLAMA_CHAT, OLLAMA_GENERATE)


def api_for(method: str, path: str) -> Api | None:
    """The API a request to `path` belongs to, or None: passed on untouched."""
    return next((api for api in APIS if api.owns(method, path)), None)
