"""mock_llm.wire.responses_request: a Responses API body read as the messages the mock plays."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mock_llm.flows.trigger import last_user_text
from mock_llm.wire.chat_request import RequestError, offered_tools
from mock_llm.wire.responses_request import parse_responses_request


def body(**fields: object) -> bytes:
    base: dict[str, object] = {"model": "m", "input": "hi [[mock:clean#k1]]"}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}).encode()


def test_a_string_input_is_one_user_message_and_stream_defaults_to_false():
    request = parse_responses_request(body())
    assert (request.model, request.stream, request.include_usage) == ("m", False, False)
    assert request.messages == [{"role": "user", "content": "hi [[mock:clean#k1]]"}]
    assert offered_tools(request) == ()


def test_instructions_come_first_as_a_system_message():
    request = parse_responses_request(body(instructions="Be terse.", stream=True))
    assert request.messages[0] == {"role": "system", "content": "Be terse."}
    assert request.stream


def test_the_body_is_kept_as_sent_for_the_journal():
    raw = body(store=False, previous_response_id="resp_x", max_output_tokens=5)
    assert parse_responses_request(raw).body == json.loads(raw)


def test_message_items_keep_their_role_and_content_parts():
    items: list[dict[str, Any]] = [
        {"role": "developer", "content": "Answer from the notes."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "b", "annotations": []}],
        },
        {"role": "user", "content": [{"type": "input_text", "text": "c [[mock:clean#k2]]"}]},
    ]
    request = parse_responses_request(body(input=items))
    assert [m["role"] for m in request.messages] == ["developer", "user", "assistant", "user"]
    assert request.messages[1]["content"] == items[1]["content"]
    assert last_user_text(request.messages) == "c [[mock:clean#k2]]"


def test_function_calls_and_their_outputs_become_a_tool_round():
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "When do backups run? [[mock:tool-then-answer#k3]]"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "call_a", "name": "read", "arguments": '{"p": 1}'},
        {"type": "function_call", "call_id": "call_b", "name": "list", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "Nightly."},
        {
            "type": "function_call_output",
            "call_id": "call_b",
            "output": [{"type": "input_text", "text": "a.md"}],
        },
    ]
    request = parse_responses_request(body(input=items))
    assert request.messages[1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"p": 1}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "list", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "Nightly."},
        {
            "role": "tool",
            "tool_call_id": "call_b",
            "content": [{"type": "input_text", "text": "a.md"}],
        },
    ]
    assert last_user_text(request.messages).endswith("[[mock:tool-then-answer#k3]]")


def test_function_tools_are_flat_and_other_tools_are_skipped():
    tools = [
        {"type": "function", "name": "read", "parameters": {"type": "object"}},
        {"type": "web_search"},
        {"type": "function", "name": "grep", "parameters": {}, "strict": True},
    ]
    assert offered_tools(parse_responses_request(body(tools=tools))) == ("read", "grep")


@pytest.mark.parametrize(
    ("raw", "param", "message"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1]", None, "must be a JSON object"),
        (b"[" * 65 + b"]" * 65, None, "nests deeper than 64 levels"),
        (body(model=...), "model", "model parameter"),
        (body(model=3), "model", "model parameter"),
        (body(input=...), "input", "non-empty list of input items"),
        (body(input=[]), "input", "non-empty list of input items"),
        (body(input=3), "input", "non-empty list of input items"),
        (body(input=["hi"]), "input[0]", "must be an object"),
        (body(input=[{"content": "x"}]), "input[0].role", "role must be one of"),
        (body(input=[{"role": "tool", "content": "x"}]), "input[0].role", "got 'tool'"),
        (body(input=[{"role": "user", "content": 3}]), "input[0].content", "list of content"),
        (body(input=[{"role": "user"}]), "input[0].content", "list of content parts"),
        (body(input=[{"role": "user", "content": ["x"]}]), "input[0].content[0]", "an object"),
        (
            body(input=[{"role": "user", "content": [{"type": "input_text", "text": 3}]}]),
            "input[0].content[0].text",
            "must be a string",
        ),
        (body(input=[{"type": "item_reference", "id": "x"}]), "input[0].type", "got 'item_ref"),
        (
            body(input=[{"type": "function_call", "name": "read", "arguments": "{}"}]),
            "input[0].call_id",
            "must be a string",
        ),
        (
            body(input=[{"type": "function_call", "call_id": "c", "arguments": "{}"}]),
            "input[0].name",
            "must be a string",
        ),
        (
            body(input=[{"type": "function_call", "call_id": "c", "name": "r", "arguments": {}}]),
            "input[0].arguments",
            "must be a string",
        ),
        (
            body(input=[{"type": "function_call_output", "call_id": "c", "output": 3}]),
            "input[0].output",
            "list of content parts",
        ),
        (
            body(input=[{"type": "function_call_output", "output": "x"}]),
            "input[0].call_id",
            "must be a string",
        ),
        (body(instructions=["x"]), "instructions", "must be a string"),
        (body(stream="yes"), "stream", "must be a boolean"),
        (body(tools={"name": "read"}), "tools", "must be a list"),
        (body(tools=["read"]), "tools[0]", "must be an object"),
        (body(tools=[{"type": "function"}]), "tools[0].name", "must be a string"),
    ],
)
def test_bad_request_names_the_parameter(raw: bytes, param: str | None, message: str):
    with pytest.raises(RequestError) as caught:
        parse_responses_request(raw)
    assert caught.value.param == param
    assert message in caught.value.message
    assert caught.value.status == 400
