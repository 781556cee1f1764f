"""Validate a Gemini API request (`POST /v1beta/models/{model}:generateContent` or
`:streamGenerateContent`, also under `/v1/`) and read it as the chat messages the rest of
the mock works on. Pure: the path's last segment, the `alt` query parameter and the body
in; a ChatRequest or a RequestError.

The body maps onto chat messages (system, assistant with `tool_calls`, `tool` per function
response, user) so routing, extractive steps and usage work as on chat completions.

Deliberate choices:
- As Google's parser does, a field is read by its lowerCamelCase or snake_case name, and a
  single object stands for a list of one (Google's own curl examples send one).
- Unknown fields are accepted and ignored, where Google would refuse them: a flow decides
  what the model says.
- Thought parts are skipped, as the Responses API's reasoning items are.
- An error names the field the way Google's `BadRequest` does
  (`contents[2].parts[0].functionCall.name`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, cast

from guardrail.json_shapes import JSONObject, is_array, is_object
from mock_llm.wire.chat_request import ChatRequest, RequestError, decode_body

METHODS = {"generateContent": False, "streamGenerateContent": True}
"""Each method the mock answers, and whether it streams."""
ALTS = ("json", "sse")
ROLES = ("user", "model", "tool", "function")
RESPONSE_TEXT_KEYS = ("output", "result", "content", "error")
"""The fields of a function response that hold its text (Google names `output` and
`error`; google-genai's automatic function calling sends `result`)."""


@dataclass(frozen=True)
class GeminiCall:
    """What the path and the query ask for."""

    model: str
    stream: bool
    json_array: bool


@dataclass(frozen=True)
class _FunctionCall:
    id: str | None
    name: str
    text: str  # the arguments as JSON text, or a function response's text


@dataclass(frozen=True)
class _Part:
    text: str | None
    thought: bool
    call: _FunctionCall | None
    answer: _FunctionCall | None


def parse_call(call: str, alt: str | None) -> GeminiCall:
    """`{model}:{method}` (the path's last segment) and `alt`, checked."""
    model, colon, method = call.rpartition(":")
    if not colon or method not in METHODS:
        known = ", ".join(METHODS)
        raise RequestError(f"Method not found: {call!r} (the mock answers {known}).", status=404)
    if not model:
        raise RequestError("The path names no model: models/{model}:" + method, "model")
    if alt is not None and alt not in ALTS:
        raise RequestError(f"'alt' must be one of {', '.join(ALTS)}; got {alt!r}.", "alt")
    stream = METHODS[method]
    return GeminiCall(model, stream, stream and alt != "sse")


def parse_gemini_request(raw: bytes, call: str, alt: str | None = None) -> ChatRequest:
    """The request, validated, with `messages` read from `systemInstruction` and
    `contents`."""
    where = parse_call(call, alt)
    body = decode_body(raw)
    messages = _system(_field(body, "systemInstruction"))
    messages += _contents(_field(body, "contents"))
    tools = _tool_names(_field(body, "tools"))
    _check_config(_field(body, "generationConfig"))
    return ChatRequest(
        body,
        where.model,
        messages,
        where.stream,
        include_usage=False,
        tool_names=tools,
        json_array=where.json_array,
    )


@functools.cache
def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()


def _field(fields: dict[str, Any], name: str) -> Any:
    """A field by its lowerCamelCase `name`, else by its snake_case one."""
    if name in fields:
        return fields[name]
    return fields.get(_snake(name))


def _object(value: object, param: str) -> JSONObject:
    if not is_object(value):
        raise RequestError(f"{param} must be an object.", param)
    return value


def _repeated(value: object, param: str) -> list[object]:
    """A repeated field: a list, one object standing for a list of one, or nothing."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    if not is_array(value):
        raise RequestError(f"{param} must be a list.", param)
    return value


def _string(fields: dict[str, Any], name: str, param: str) -> str | None:
    value = fields.get(name)
    if value is not None and not isinstance(value, str):
        raise RequestError(f"{param}.{name} must be a string.", f"{param}.{name}")
    return value


def _system(value: object) -> list[dict[str, Any]]:
    if value is None:
        return []
    param = "systemInstruction"
    content = _object(value, param)
    parts = _parts(content, param, required=False)
    texts = [part.text for part in parts if part.text is not None]
    return [{"role": "system", "content": "\n".join(texts)}]


def _contents(value: object) -> list[dict[str, Any]]:
    items = _repeated(value, "contents")
    if not items:
        raise RequestError("contents is not specified: send at least one content.", "contents")
    messages: list[dict[str, Any]] = []
    unanswered: list[tuple[str, str]] = []  # (id, name) of the calls made so far
    for index, item in enumerate(items):
        param = f"contents[{index}]"
        content = _object(item, param)
        role = content.get("role")
        if role is None or role == "":
            role = "user"
        if not isinstance(role, str) or role not in ROLES:
            raise RequestError(
                f"{param}.role must be one of {', '.join(ROLES)}; got {role!r}.", f"{param}.role"
            )
        parts = _parts(content, param, required=True)
        texts = [p.text for p in parts if p.text is not None and not p.thought]
        if role == "model":
            calls = [
                _FunctionCall(p.call.id or f"gemini_call_{index}_{n}", p.call.name, p.call.text)
                for n, p in enumerate(parts)
                if p.call is not None
            ]
            messages.append(_assistant("\n".join(texts), calls))
            unanswered += [(cast(str, call.id), call.name) for call in calls]
            continue
        for n, part in enumerate(parts):
            if part.answer is not None:
                call_id = _answered(unanswered, part.answer) or f"gemini_response_{index}_{n}"
                messages.append(
                    {"role": "tool", "tool_call_id": call_id, "content": part.answer.text}
                )
        if any(part.answer is None for part in parts):
            messages.append({"role": "user", "content": "\n".join(texts)})
    return messages


def _assistant(text: str, calls: list[_FunctionCall]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.text}}
            for c in calls
        ]
    return message


def _answered(unanswered: list[tuple[str, str]], answer: _FunctionCall) -> str | None:
    """The id of the call `answer` answers (taken off `unanswered`): the one of its id,
    else the first of its name; None when there is none."""
    for position, (call_id, name) in enumerate(unanswered):
        if call_id == answer.id or (answer.id is None and name == answer.name):
            del unanswered[position]
            return call_id
    return answer.id


def _parts(content: dict[str, Any], param: str, *, required: bool) -> list[_Part]:
    where = f"{param}.parts"
    items = _repeated(_field(content, "parts"), where)
    if required and not items:
        raise RequestError(f"{where} must not be empty.", where)
    return [_part(item, f"{where}[{n}]") for n, item in enumerate(items)]


def _part(value: object, param: str) -> _Part:
    part = _object(value, param)
    text = _string(part, "text", param)
    thought = part.get("thought", False)
    if not isinstance(thought, bool):
        raise RequestError(f"{param}.thought must be a boolean.", f"{param}.thought")
    call = _field(part, "functionCall")
    answer = _field(part, "functionResponse")
    return _Part(
        text,
        thought,
        None if call is None else _function_call(call, f"{param}.functionCall", "args"),
        None if answer is None else _function_call(answer, f"{param}.functionResponse", "response"),
    )


def _function_call(value: object, param: str, payload: str) -> _FunctionCall:
    """A `functionCall` (its `args`) or a `functionResponse` (its `response`)."""
    fields = _object(value, param)
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise RequestError(f"{param}.name must be a non-empty string.", f"{param}.name")
    call_id = _string(fields, "id", param)
    data: object = fields.get(payload)
    given: dict[str, Any] = {} if data is None else _object(data, f"{param}.{payload}")
    text = _response_text(given) if payload == "response" else _json(given)
    return _FunctionCall(call_id, name, text)


def _response_text(response: dict[str, Any]) -> str:
    for key in RESPONSE_TEXT_KEYS:
        value = response.get(key)
        if isinstance(value, str):
            return value
    return _json(response)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _tool_names(value: object) -> tuple[str, ...]:
    """The names of the function declarations (other tools are skipped)."""
    names: list[str] = []
    for index, tool in enumerate(_repeated(value, "tools")):
        param = f"tools[{index}]"
        where = f"{param}.functionDeclarations"
        declarations = _repeated(_field(_object(tool, param), "functionDeclarations"), where)
        for number, declaration in enumerate(declarations):
            at = f"{where}[{number}]"
            name = _object(declaration, at).get("name")
            if not isinstance(name, str) or not name:
                raise RequestError(f"{at}.name must be a non-empty string.", f"{at}.name")
            names.append(name)
    return tuple(names)


def _check_config(value: object) -> None:
    """`generationConfig` is an object; one candidate; `thinkingConfig` an object."""
    if value is None:
        return
    config = _object(value, "generationConfig")
    count: object = _field(config, "candidateCount")
    if count is not None and (isinstance(count, bool) or count != 1):
        raise RequestError(
            "mock_llm answers with one candidate; generationConfig.candidateCount must be 1.",
            "generationConfig.candidateCount",
        )
    thinking = _field(config, "thinkingConfig")
    if thinking is not None:
        _object(thinking, "generationConfig.thinkingConfig")
