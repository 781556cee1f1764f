"""Validate an Anthropic Messages API request (`POST /v1/messages`) and read it as the chat
messages the rest of the mock works on. Pure: bytes in, a ChatRequest or a RequestError.

Deliberate choices:
- `tool_use` and `tool_result` blocks become `tool_calls` and `tool` messages in their
  place, so a user message of tool results alone is no user message and the question
  before it stays the last one, trigger and all.
- `max_tokens` is required as on the API, and `thinking` must have a `type`, though a flow
  decides where an answer ends and whether there is reasoning; other fields and block
  types are accepted and ignored.
- An error names its place in the message (`messages.2.content.0.text: ...`): the
  Messages API's error body has no `param`.
"""

from __future__ import annotations

import json
from typing import Any

from guardrail.json_shapes import JSONObject, is_array, is_object, string_field
from mock_llm.wire.chat_request import ChatRequest, RequestError, body_model, decode_body

ROLES = ("user", "assistant")
TOOL_TYPES = (None, "custom")
"""The `type` of a tool the request offers by name (the others are server tools)."""
OWNERS = {"tool_use": ("assistant", "an"), "tool_result": ("user", "a")}
"""The role whose messages a tool block belongs in (with its article, for the message)."""


def parse_anthropic_request(raw: bytes) -> ChatRequest:
    """The request, validated, with `messages` read from `system` and `messages`."""
    body = decode_body(raw)
    model = body_model(body)
    _max_tokens(body.get("max_tokens"))
    messages = _system(body.get("system"))
    messages += _messages(body.get("messages"))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _error("stream", "must be a boolean.")
    _thinking(body.get("thinking"))
    tools = _tool_names(body.get("tools"))
    return ChatRequest(body, model, messages, stream, include_usage=False, tool_names=tools)


def _error(param: str, problem: str) -> RequestError:
    return RequestError(f"{param}: {problem}", param)


def _max_tokens(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _error("max_tokens", "a positive integer is required.")


def _system(value: object) -> list[dict[str, Any]]:
    if value is None:
        return []
    if is_array(value):
        _blocks(value, "system")
    elif not isinstance(value, str):
        raise _error("system", "must be a string or a list of text blocks.")
    return [{"role": "system", "content": value}]


def _messages(value: object) -> list[dict[str, Any]]:
    if not is_array(value) or not value:
        raise _error("messages", "must be a non-empty list of messages.")
    messages: list[dict[str, Any]] = []
    for index, fields in enumerate(value):
        param = f"messages.{index}"
        if not is_object(fields):
            raise _error(param, "must be an object.")
        role = fields.get("role")
        if role not in ROLES:
            raise _error(f"{param}.role", f"must be 'user' or 'assistant'; got {role!r}.")
        content = fields.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
        elif is_array(content):
            blocks = _blocks(content, f"{param}.content", role)
            messages += _assistant(blocks) if role == "assistant" else _user(blocks)
        else:
            raise _error(f"{param}.content", "must be a string or a list of content blocks.")
    return messages


def _blocks(blocks: list[object], param: str, role: str | None = None) -> list[dict[str, Any]]:
    """The blocks, each an object with a string `type`; a `text` block's text a string, a
    `tool_use` block (assistant only) and a `tool_result` block (user only) well formed.
    Without a role (a `system` list, a tool result's content) only text blocks count."""
    checked: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        where = f"{param}.{index}"
        if not is_object(block):
            raise _error(where, "must be an object (a content block).")
        kind = block.get("type")
        if not isinstance(kind, str):
            raise _error(f"{where}.type", "must be a string.")
        if kind == "text" and not isinstance(block.get("text"), str):
            raise _error(f"{where}.text", "must be a string.")
        if kind in OWNERS:
            owner, article = OWNERS[kind]
            if role != owner:
                raise _error(where, f"a {kind} block belongs in {article} {owner} message.")
            _check_tool_block(block, kind, where)
        checked.append(block)
    return checked


def _check_tool_block(block: JSONObject, kind: str, where: str) -> None:
    if kind == "tool_use":
        for name in ("id", "name"):
            if not isinstance(block.get(name), str):
                raise _error(f"{where}.{name}", "must be a string.")
        if not isinstance(block.get("input"), dict):
            raise _error(f"{where}.input", "must be an object.")
        return
    if not isinstance(block.get("tool_use_id"), str):
        raise _error(f"{where}.tool_use_id", "must be a string.")
    content = block.get("content")
    if is_array(content):
        _blocks(content, f"{where}.content")
    elif content is not None and not isinstance(content, str):
        raise _error(f"{where}.content", "must be a string or a list of content blocks.")


def _assistant(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An assistant message: its tool_use blocks as tool calls, the rest as its content."""
    calls = [
        {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"])},
        }
        for block in blocks
        if block["type"] == "tool_use"
    ]
    rest = [block for block in blocks if block["type"] != "tool_use"]
    if not calls:
        return [{"role": "assistant", "content": rest}]
    return [{"role": "assistant", "content": rest or None, "tool_calls": calls}]


def _user(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A user message: each tool_result block a tool message, the blocks between them user
    messages, in order (no user message for tool results alone)."""
    messages: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] != "tool_result":
            pending.append(block)
            continue
        if pending:
            messages.append({"role": "user", "content": pending})
            pending = []
        content = block.get("content")
        messages.append(
            {
                "role": "tool",
                "tool_call_id": block["tool_use_id"],
                "content": "" if content is None else content,
            }
        )
    if pending or not messages:
        messages.append({"role": "user", "content": pending})
    return messages


def _thinking(value: object) -> None:
    if value is None:
        return
    if string_field(value, "type") is None:
        raise _error("thinking", "must be an object with a string 'type'.")


def _tool_names(value: object) -> tuple[str, ...]:
    """The names of the custom tools (Anthropic's server tools are skipped)."""
    if value is None:
        return ()
    if not is_array(value):
        raise _error("tools", "must be a list.")
    names: list[str] = []
    for index, tool in enumerate(value):
        param = f"tools.{index}"
        if not is_object(tool):
            raise _error(param, "must be an object.")
        if tool.get("type") in TOOL_TYPES:
            name = tool.get("name")
            if not isinstance(name, str):
                raise _error(f"{param}.name", "must be a string.")
            names.append(name)
    return tuple(names)
