"""Validate an OpenAI Responses API request (`POST /v1/responses`) and read it as the chat
messages the rest of the mock works on. Pure: bytes in, a ChatRequest or a RequestError.

`instructions` becomes a system message, `input` user (and assistant) messages, function
calls and their outputs `tool_calls` and `tool` messages, and reasoning items are skipped,
so routing, extractive steps and usage work as on chat completions.

Deliberate choices:
- An error names the parameter as the OpenAI API does (`input[2].call_id`), so the SDK
  surfaces it as `BadRequestError.param`.
- Other fields (`store`, `previous_response_id`, ...) are accepted and ignored: the mock
  keeps no responses, and a flow decides where an answer ends.
"""

from __future__ import annotations

from typing import Any

from guardrail.json_shapes import JSONObject, is_array, is_object
from mock_llm.wire.chat_request import ChatRequest, RequestError, body_model, decode_body

ROLES = frozenset({"user", "assistant", "system", "developer"})
ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning")


def parse_responses_request(raw: bytes) -> ChatRequest:
    """The request, validated, with `messages` read from `instructions` and `input`."""
    body = decode_body(raw)
    model = body_model(body)
    messages = _instructions(body.get("instructions"))
    messages += _input(body.get("input"))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestError("'stream' must be a boolean.", "stream")
    tools = _tool_names(body.get("tools"))
    return ChatRequest(body, model, messages, stream, include_usage=False, tool_names=tools)


def _instructions(value: object) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, str):
        raise RequestError("'instructions' must be a string.", "instructions")
    return [{"role": "system", "content": value}]


def _input(value: object) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not is_array(value) or not value:
        raise RequestError("'input' must be a string or a non-empty list of input items.", "input")
    messages: list[dict[str, Any]] = []
    for index, fields in enumerate(value):
        param = f"input[{index}]"
        if not is_object(fields):
            raise RequestError(f"{param} must be an object.", param)
        kind = fields.get("type", "message")
        if kind == "message":
            messages.append(_message(fields, param))
        elif kind == "function_call":
            call = _function_call(fields, param)
            last = messages[-1] if messages else None
            if last is not None and last.get("role") == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(_function_call_output(fields, param))
        elif kind != "reasoning":
            raise RequestError(
                f"{param}.type must be one of {', '.join(ITEM_TYPES)}; got {kind!r}.",
                f"{param}.type",
            )
    return messages


def _message(item: JSONObject, param: str) -> dict[str, Any]:
    role = item.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise RequestError(
            f"{param}.role must be one of {', '.join(sorted(ROLES))}; got {role!r}.",
            f"{param}.role",
        )
    return {"role": role, "content": _text_or_parts(item.get("content"), f"{param}.content")}


def _text_or_parts(value: object, param: str) -> str | list[object]:
    """`value` as a message's content: a string, or a list of content parts checked."""
    if is_array(value):
        _check_parts(value, param)
        return value
    if not isinstance(value, str):
        raise RequestError(f"{param} must be a string or a list of content parts.", param)
    return value


def _check_parts(parts: list[object], param: str) -> None:
    """Every part is an object, and a text part's `text` is a string (a trigger in any
    other would be silently lost)."""
    for index, part in enumerate(parts):
        where = f"{param}[{index}]"
        if not is_object(part):
            raise RequestError(f"{where} must be an object.", where)
        text = part.get("text")
        if part.get("type") in ("input_text", "output_text") and not isinstance(text, str):
            raise RequestError(f"{where}.text must be a string.", f"{where}.text")


def _string(item: JSONObject, name: str, param: str) -> str:
    value = item.get(name)
    if not isinstance(value, str):
        raise RequestError(f"{param}.{name} must be a string.", f"{param}.{name}")
    return value


def _function_call(item: JSONObject, param: str) -> dict[str, Any]:
    call_id = _string(item, "call_id", param)
    name = _string(item, "name", param)
    arguments = _string(item, "arguments", param)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _function_call_output(item: JSONObject, param: str) -> dict[str, Any]:
    call_id = _string(item, "call_id", param)
    output = _text_or_parts(item.get("output"), f"{param}.output")
    return {"role": "tool", "tool_call_id": call_id, "content": output}


def _tool_names(value: object) -> tuple[str, ...]:
    """The names of the function tools (other tool types, built-in ones, are skipped)."""
    if value is None:
        return ()
    if not is_array(value):
        raise RequestError("'tools' must be a list.", "tools")
    names: list[str] = []
    for index, tool in enumerate(value):
        param = f"tools[{index}]"
        if not is_object(tool):
            raise RequestError(f"{param} must be an object.", param)
        if tool.get("type") == "function":
            names.append(_string(tool, "name", param))
    return tuple(names)
