"""Validate a chat-completions request body. Pure: bytes in, a ChatRequest or a RequestError.

The checks are the ones a client bug trips in practice (not JSON, no messages, a message
without a role, stream flags of the wrong type); each error names the offending parameter
the way the OpenAI API does, so the SDK surfaces it as `BadRequestError` with `.param`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from guardrail.json_shapes import as_array, as_object, is_array, is_object, string_field

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


class RequestError(ValueError):
    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status


@dataclass(frozen=True)
class ChatRequest:
    body: dict[str, Any]
    model: str
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    tool_names: tuple[str, ...] | None = None
    """The functions the request offers, when its parser read them (the Responses API's
    flat tools); None: `offered_tools` reads them from the chat-completions `tools`."""
    json_array: bool = False
    """Gemini's streamGenerateContent without `alt=sse`: the stream is one JSON array."""


MAX_JSON_DEPTH = 64
"""How deeply a body's arrays and objects may nest. Real requests nest a dozen levels at
most (a tool's parameter schema); Python's parser recurses per level, and so does every
later JSON write of the body (the journal), so a deeper body is refused before parsing."""


def json_depth_over(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `raw`'s arrays and objects nest deeper than `limit` (strings skipped, an
    unterminated one running to the end; brackets of invalid JSON are counted all the same).

    All in C but the last step: a body with at most `limit` opening brackets, strings
    included, cannot nest deeper (most requests: counted, no more); otherwise the strings go
    in one regular-expression pass and the rest is cut down to its brackets, which are
    walked. A byte-by-byte Python loop cost a 5 KB request 0.4 ms.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    depth = 0
    for byte in brackets:
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        else:  # ] }
            depth -= 1
    return False


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
"""A JSON string, escapes included; one never closed runs to the end of the body."""
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def parse_chat_request(raw: bytes, *, stream_default: bool = False) -> ChatRequest:
    """The request, validated; `stream_default` is what a body without `stream` means
    (False for OpenAI's chat completions, True for Ollama's /api/chat)."""
    body = decode_body(raw)
    model = body_model(body)
    messages = _messages(body.get("messages"))
    stream = body.get("stream", stream_default)
    if not isinstance(stream, bool):
        raise RequestError("'stream' must be a boolean.", "stream")
    n = body.get("n", 1)
    if n not in (1, None):
        raise RequestError("mock_llm answers with one choice; 'n' must be 1.", "n")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise RequestError("'tools' must be a list.", "tools")
    return ChatRequest(body, model, messages, stream, _include_usage(body.get("stream_options")))


def decode_body(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object: not too deeply nested, valid JSON, an object."""
    if json_depth_over(raw):
        raise RequestError(f"The request body nests deeper than {MAX_JSON_DEPTH} levels.")
    try:
        decoded: object = json.loads(raw)
    except ValueError as exc:  # not JSON, not UTF-8, or a number past Python's digit limit
        raise RequestError(f"The request body is not valid JSON: {exc}") from exc
    if not is_object(decoded):
        raise RequestError("The request body must be a JSON object.")
    return decoded


def body_model(body: dict[str, Any]) -> str:
    """The body's `model`, a non-empty string."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError("You must provide a model parameter (a non-empty string).", "model")
    return model


def _messages(value: object) -> list[dict[str, Any]]:
    if not is_array(value) or not value:
        raise RequestError("'messages' must be a non-empty list of messages.", "messages")
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(value):
        if not is_object(message):
            raise RequestError(f"messages[{index}] must be an object.", f"messages[{index}]")
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise RequestError(
                f"messages[{index}].role must be one of {', '.join(sorted(ROLES))}; got {role!r}.",
                f"messages[{index}].role",
            )
        _check_content(message.get("content"), index)
        messages.append(message)
    return messages


def _check_content(content: object, index: int) -> None:
    """Content is a string, null (an assistant message with tool calls) or a list of
    content parts (objects): anything else would be read as no text at all, and a trigger
    in it silently lost."""
    param = f"messages[{index}].content"
    if content is None or isinstance(content, str):
        return
    if is_array(content) and all(is_object(part) for part in content):
        return
    raise RequestError(f"{param} must be a string or a list of content parts.", param)


def _include_usage(options: object) -> bool:
    if options is None:
        return False
    if not is_object(options):
        raise RequestError("'stream_options' must be an object.", "stream_options")
    include = options.get("include_usage", False)
    if not isinstance(include, bool):
        raise RequestError("'stream_options.include_usage' must be a boolean.", "stream_options")
    return include


def offered_tools(chat: ChatRequest) -> tuple[str, ...]:
    """The names of the functions the request offers as tools (malformed entries skipped)."""
    if chat.tool_names is not None:
        return chat.tool_names
    names: list[str] = []
    for tool in as_array(chat.body.get("tools")):
        name = string_field((as_object(tool) or {}).get("function"), "name")
        if name is not None:
            names.append(name)
    return tuple(names)
