"""mock_llm.wire.anthropic_request: a Messages API body read as the chat messages the mock plays."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.model import Extract
from mock_llm.flows.trigger import last_user_text
from mock_llm.play.extractive import note_to_read
from mock_llm.play.routing import route_request
from mock_llm.play.side_calls import SideCallRules
from mock_llm.wire.anthropic_request import parse_anthropic_request
from mock_llm.wire.chat_request import ChatRequest, RequestError, offered_tools

QUESTION = "When do backups run? [[mock:tool-then-answer#k1]]"


def body(**fields: object) -> bytes:
    base: dict[str, object] = {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": QUESTION}],
    }
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}).encode()


def tool_round(*result_blocks: dict[str, Any]) -> list[dict[str, Any]]:
    """A question, the assistant's tool use, and the user message answering it."""
    return [
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Read it.", "signature": "s"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "/a.md"}},
            ],
        },
        {"role": "user", "content": list(result_blocks)},
    ]


def test_a_string_message_is_one_user_message_and_stream_defaults_to_false():
    request = parse_anthropic_request(body())
    assert (request.model, request.stream, request.include_usage) == ("claude-test", False, False)
    assert request.messages == [{"role": "user", "content": QUESTION}]
    assert offered_tools(request) == ()


def test_the_body_is_kept_as_sent_for_the_journal():
    raw = body(temperature=0.2, metadata={"user_id": "u"}, stop_sequences=["x"], stream=True)
    request = parse_anthropic_request(raw)
    assert request.body == json.loads(raw)
    assert request.stream


@pytest.mark.parametrize(
    "system",
    ["Answer from the notes.", [{"type": "text", "text": "Answer from the notes."}]],
    ids=["string", "blocks"],
)
def test_the_system_prompt_comes_first_as_a_system_message(system: object):
    request = parse_anthropic_request(body(system=system))
    assert request.messages[0] == {"role": "system", "content": system}
    assert last_user_text(request.messages) == QUESTION


def test_text_blocks_keep_their_place_and_image_blocks_carry_no_text():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}
    blocks = [{"type": "text", "text": "look:"}, image, {"type": "text", "text": QUESTION}]
    request = parse_anthropic_request(body(messages=[{"role": "user", "content": blocks}]))
    assert request.messages == [{"role": "user", "content": blocks}]
    assert last_user_text(request.messages) == f"look:\n{QUESTION}"


def test_an_assistants_tool_use_blocks_become_its_tool_calls():
    request = parse_anthropic_request(body(messages=tool_round()))
    assistant = request.messages[1]
    assert assistant["tool_calls"] == [
        {
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path": "/a.md"}'},
        }
    ]
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text"]


def test_a_tool_use_alone_is_an_assistant_message_with_no_content():
    use = {"type": "tool_use", "id": "t", "name": "list", "input": {}}
    messages = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": [use]}]
    request = parse_anthropic_request(body(messages=messages))
    assert request.messages[1]["content"] is None


def test_tool_results_alone_are_tool_messages_so_the_question_stays_the_last_user_message():
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Nightly at 02:00."}
    request = parse_anthropic_request(body(messages=tool_round(result)))
    assert request.messages[2:] == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Nightly at 02:00."}
    ]
    assert last_user_text(request.messages) == QUESTION
    assert route_request(request.messages, SideCallRules.of(())).key == "k1"


def test_a_tool_results_block_content_is_kept_and_a_missing_one_is_empty():
    blocks = [{"type": "text", "text": "a.md"}]
    results = (
        {"type": "tool_result", "tool_use_id": "a", "content": blocks, "is_error": False},
        {"type": "tool_result", "tool_use_id": "b"},
    )
    request = parse_anthropic_request(body(messages=tool_round(*results)))
    assert [(m["tool_call_id"], m["content"]) for m in request.messages[2:]] == [
        ("a", blocks),
        ("b", ""),
    ]


def test_text_after_tool_results_is_a_user_message_of_its_own():
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    more = {"type": "text", "text": "And restores? [[mock:clean#k2]]"}
    request = parse_anthropic_request(body(messages=tool_round(result, more)))
    assert [m["role"] for m in request.messages[2:]] == ["tool", "user"]
    assert route_request(request.messages, SideCallRules.of(())).key == "k2"


def test_an_extract_step_reads_the_tool_result_as_having_answered():
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Nightly."}
    system = '<excerpt path="/homelab/backups.md">Backups run nightly.</excerpt>'
    tools = [{"name": "read", "input_schema": {"type": "object"}}]
    asked = parse_anthropic_request(body(system=system, tools=tools))
    answered = parse_anthropic_request(
        body(system=system, tools=tools, messages=tool_round(result))
    )
    spec = Extract(read="read")
    assert note_to_read(asked.messages, offered_tools(asked), spec) == "/homelab/backups.md"
    assert note_to_read(answered.messages, offered_tools(answered), spec) is None


def test_custom_tools_are_offered_and_server_tools_are_skipped():
    tools = [
        {"name": "read", "description": "Read a note.", "input_schema": {"type": "object"}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "custom", "name": "grep", "input_schema": {}},
    ]
    assert offered_tools(parse_anthropic_request(body(tools=tools))) == ("read", "grep")


@pytest.mark.parametrize(
    "thinking",
    [{"type": "enabled", "budget_tokens": 2048}, {"type": "disabled"}, {"type": "adaptive"}],
)
def test_thinking_is_accepted_and_the_flow_decides_whether_there_is_reasoning(thinking: object):
    assert parse_anthropic_request(body(thinking=thinking)).messages[-1]["content"] == QUESTION


USER = "user"
TEXT = {"type": "text", "text": "x"}


def message(*blocks: object, role: str = USER) -> list[dict[str, Any]]:
    return [{"role": role, "content": list(blocks)}]


@pytest.mark.parametrize(
    ("raw", "param", "message_text"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1]", None, "must be a JSON object"),
        (b'"text"', None, "must be a JSON object"),
        (b"[" * 65 + b"]" * 65, None, "nests deeper than 64 levels"),
        (b'{"model": "m", "max_tokens": 1e999999}', "max_tokens", "positive integer"),
        (b'{"model": "m", "max_tokens": ' + b"9" * 5000 + b"}", None, "not valid JSON"),
        (b"\xff\xfe{}", None, "not valid JSON"),
        (body(model=...), "model", "model parameter"),
        (body(model=""), "model", "model parameter"),
        (body(max_tokens=...), "max_tokens", "max_tokens: a positive integer is required."),
        (body(max_tokens=0), "max_tokens", "positive integer"),
        (body(max_tokens=1.5), "max_tokens", "positive integer"),
        (body(max_tokens=True), "max_tokens", "positive integer"),
        (body(max_tokens="1024"), "max_tokens", "positive integer"),
        (body(messages=...), "messages", "messages: must be a non-empty list"),
        (body(messages=[]), "messages", "non-empty list"),
        (body(messages={"role": "user"}), "messages", "non-empty list"),
        (body(messages=["hi"]), "messages.0", "messages.0: must be an object"),
        (body(messages=[{"content": "x"}]), "messages.0.role", "got None"),
        (body(messages=[{"role": "system", "content": "x"}]), "messages.0.role", "got 'system'"),
        (body(messages=[{"role": "user"}]), "messages.0.content", "string or a list"),
        (body(messages=[{"role": "user", "content": 3}]), "messages.0.content", "string or a list"),
        (body(messages=message("x")), "messages.0.content.0", "must be an object"),
        (body(messages=message({"text": "x"})), "messages.0.content.0.type", "must be a string"),
        (
            body(messages=message({"type": "text", "text": 3})),
            "messages.0.content.0.text",
            "must be a string",
        ),
        (
            body(messages=message({"type": "tool_use", "id": "t", "name": "r", "input": {}})),
            "messages.0.content.0",
            "a tool_use block belongs in an assistant message",
        ),
        (
            body(messages=message({"type": "tool_result", "tool_use_id": "t"}, role="assistant")),
            "messages.0.content.0",
            "a tool_result block belongs in a user message",
        ),
        (
            body(
                messages=message({"type": "tool_use", "name": "r", "input": {}}, role="assistant")
            ),
            "messages.0.content.0.id",
            "must be a string",
        ),
        (
            body(messages=message({"type": "tool_use", "id": "t", "input": {}}, role="assistant")),
            "messages.0.content.0.name",
            "must be a string",
        ),
        (
            body(
                messages=message(
                    {"type": "tool_use", "id": "t", "name": "r", "input": "{}"}, role="assistant"
                )
            ),
            "messages.0.content.0.input",
            "must be an object",
        ),
        (
            body(messages=message({"type": "tool_result", "content": "x"})),
            "messages.0.content.0.tool_use_id",
            "must be a string",
        ),
        (
            body(messages=message({"type": "tool_result", "tool_use_id": "t", "content": 3})),
            "messages.0.content.0.content",
            "string or a list",
        ),
        (
            body(messages=message({"type": "tool_result", "tool_use_id": "t", "content": [3]})),
            "messages.0.content.0.content.0",
            "must be an object",
        ),
        (
            body(messages=[{"role": "user", "content": "q"}, *message(TEXT, 7, role="assistant")]),
            "messages.1.content.1",
            "must be an object",
        ),
        (body(system=3), "system", "string or a list of text blocks"),
        (body(system=[{"type": "text", "text": None}]), "system.0.text", "must be a string"),
        (body(system=[{"type": "tool_result", "tool_use_id": "t"}]), "system.0", "belongs in"),
        (body(stream="yes"), "stream", "must be a boolean"),
        (body(thinking="on"), "thinking", "object with a string 'type'"),
        (body(thinking={"budget_tokens": 5}), "thinking", "object with a string 'type'"),
        (body(tools={"name": "read"}), "tools", "must be a list"),
        (body(tools=["read"]), "tools.0", "must be an object"),
        (body(tools=[{"input_schema": {}}]), "tools.0.name", "must be a string"),
    ],
)
def test_a_bad_body_is_a_400_naming_its_place(
    raw: bytes, param: str | None, message_text: str | None
):
    with pytest.raises(RequestError) as caught:
        parse_anthropic_request(raw)
    assert caught.value.status == 400
    assert caught.value.param == param
    if message_text is not None:
        assert message_text in caught.value.message
    if param is not None:
        assert caught.value.message.startswith(f"{param}: ") or param == "model"


def test_a_huge_role_is_refused_with_the_role_in_the_message():
    role = "r" * 1_000_000
    with pytest.raises(RequestError) as caught:
        parse_anthropic_request(body(messages=[{"role": role, "content": "x"}]))
    assert caught.value.param == "messages.0.role"


def test_a_huge_text_is_read_whole():
    text = "word " * 200_000 + QUESTION
    request = parse_anthropic_request(body(messages=[{"role": "user", "content": text}]))
    assert route_request(request.messages, SideCallRules.of(())).key == "k1"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
block_types = st.sampled_from(["text", "image", "tool_use", "tool_result", "thinking", 3, None])
blocks = st.fixed_dictionaries(
    {"type": block_types},
    optional={
        "text": json_values,
        "id": json_values,
        "name": json_values,
        "input": json_values,
        "tool_use_id": json_values,
        "content": json_values,
    },
)
hostile_messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "system", 3]),
            "content": st.one_of(st.text(max_size=10), st.lists(blocks, max_size=3), json_values),
        }
    ),
    max_size=4,
)
hostile_bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": st.one_of(st.just("m"), json_values),
        "max_tokens": st.one_of(st.just(16), json_values),
        "messages": st.one_of(hostile_messages, json_values),
        "system": st.one_of(st.text(max_size=5), st.lists(blocks, max_size=2), json_values),
        "tools": st.one_of(st.lists(json_values, max_size=2), json_values),
        "stream": json_values,
        "thinking": json_values,
    },
)


def outcome(raw: bytes) -> ChatRequest | RequestError:
    """The request read, or the refusal (returned, not raised)."""
    try:
        return parse_anthropic_request(raw)
    except RequestError as refused:
        return refused


@given(fields=hostile_bodies)
def test_any_body_is_read_or_refused_with_a_400_never_anything_else(fields: dict[str, Any]):
    read = outcome(json.dumps(fields).encode())
    if isinstance(read, RequestError):
        assert (read.status, bool(read.message)) == (400, True)
    else:
        json.dumps(read.messages)  # what routing and the journal read is plain JSON
        last_user_text(read.messages)
