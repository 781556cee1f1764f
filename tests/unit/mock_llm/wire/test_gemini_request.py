"""mock_llm.wire.gemini_request: a Gemini API call (path, `alt`, body) read as the chat messages
the mock plays; every bad body a clear RequestError, never another exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.trigger import last_user_text
from mock_llm.wire.chat_request import RequestError, offered_tools
from mock_llm.wire.gemini_request import parse_call, parse_gemini_request

STREAM = "gemini-2.5-flash:streamGenerateContent"
WHOLE = "gemini-2.5-flash:generateContent"
QUESTION = "When do backups run? [[mock:tool-then-answer#k1]]"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def body(**fields: object) -> bytes:
    base: dict[str, object] = {"contents": [user(QUESTION)]}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}).encode()


def messages_of(raw: bytes) -> list[dict[str, Any]]:
    return parse_gemini_request(raw, WHOLE).messages


@pytest.mark.parametrize(
    ("call", "alt", "read"),
    [
        (WHOLE, None, ("gemini-2.5-flash", False, False)),
        (WHOLE, "sse", ("gemini-2.5-flash", False, False)),
        (STREAM, None, ("gemini-2.5-flash", True, True)),
        (STREAM, "json", ("gemini-2.5-flash", True, True)),
        (STREAM, "sse", ("gemini-2.5-flash", True, False)),
        ("tunedModels:x:streamGenerateContent", "sse", ("tunedModels:x", True, False)),
    ],
)
def test_the_path_gives_the_model_and_the_query_the_framing(
    call: str, alt: str | None, read: tuple[str, bool, bool]
):
    got = parse_call(call, alt)
    assert (got.model, got.stream, got.json_array) == read


@pytest.mark.parametrize(
    ("call", "alt", "status", "param"),
    [
        ("gemini-2.5-flash", None, 404, None),
        ("gemini-2.5-flash:countTokens", None, 404, None),
        ("gemini-2.5-flash:generatecontent", None, 404, None),
        (":generateContent", None, 400, "model"),
        (STREAM, "proto", 400, "alt"),
        (STREAM, "", 400, "alt"),
    ],
)
def test_an_unknown_method_is_not_found_and_a_bad_model_or_alt_a_bad_request(
    call: str, alt: str | None, status: int, param: str | None
):
    with pytest.raises(RequestError) as caught:
        parse_call(call, alt)
    assert (caught.value.status, caught.value.param) == (status, param)


def test_the_request_is_read_with_the_path_and_the_body_is_kept_as_sent():
    raw = body(generationConfig={"temperature": 0.2}, safetySettings=[])
    request = parse_gemini_request(raw, STREAM, "sse")
    assert (request.model, request.stream, request.json_array) == ("gemini-2.5-flash", True, False)
    assert request.include_usage is False
    assert request.body == json.loads(raw)


def test_a_text_content_is_a_user_message_and_the_system_instruction_comes_first():
    raw = body(systemInstruction={"role": "user", "parts": [{"text": "Be"}, {"text": "terse."}]})
    assert messages_of(raw) == [
        {"role": "system", "content": "Be\nterse."},
        {"role": "user", "content": QUESTION},
    ]


def test_a_content_without_a_role_is_the_users():
    assert messages_of(body(contents=[{"parts": [{"text": "hi"}]}])) == [
        {"role": "user", "content": "hi"}
    ]


def test_a_model_content_is_an_assistant_message_with_its_calls_and_without_its_thoughts():
    model = {
        "role": "model",
        "parts": [
            {"text": "Thinking it over.", "thought": True, "thoughtSignature": "c2ln"},
            {"text": "Let me look."},
            {"functionCall": {"name": "read", "args": {"path": "/homelab/backups.md"}}},
            {"functionCall": {"name": "list", "id": "given"}},
        ],
    }
    [_, assistant] = messages_of(body(contents=[user(QUESTION), model]))
    assert assistant == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "gemini_call_1_2",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "/homelab/backups.md"}'},
            },
            {"id": "given", "type": "function", "function": {"name": "list", "arguments": "{}"}},
        ],
    }


def test_a_model_content_with_only_calls_has_no_content():
    model = {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {}}}]}
    [_, assistant] = messages_of(body(contents=[user(QUESTION), model]))
    assert assistant["content"] is None


def test_function_responses_answer_their_calls_by_id_else_by_name_in_order():
    model = {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "read", "args": {"path": "/a.md"}}},
            {"functionCall": {"name": "read", "args": {"path": "/b.md"}}},
            {"functionCall": {"name": "list", "args": {}, "id": "L"}},
        ],
    }
    answers = {
        "role": "tool",
        "parts": [
            {"functionResponse": {"name": "list", "id": "L", "response": {"output": "a.md b.md"}}},
            {"functionResponse": {"name": "read", "response": {"output": "A."}}},
            {"functionResponse": {"name": "read", "response": {"result": "B."}}},
            {"functionResponse": {"name": "grep", "response": {"output": "none"}}},
        ],
    }
    tool_messages = messages_of(body(contents=[user(QUESTION), model, answers]))[2:]
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "L", "content": "a.md b.md"},
        {"role": "tool", "tool_call_id": "gemini_call_1_0", "content": "A."},
        {"role": "tool", "tool_call_id": "gemini_call_1_1", "content": "B."},
        {"role": "tool", "tool_call_id": "gemini_response_2_3", "content": "none"},
    ]


@pytest.mark.parametrize(
    ("response", "text"),
    [
        ({"output": "out"}, "out"),
        ({"result": "res"}, "res"),
        ({"content": "con"}, "con"),
        ({"error": "err"}, "err"),
        ({"output": ["a", 1]}, '{"output": ["a", 1]}'),
        ({"rows": 3}, '{"rows": 3}'),
        (None, "{}"),
    ],
)
def test_a_function_responses_text_is_its_output_when_a_string_else_its_json(
    response: dict[str, Any] | None, text: str
):
    answer: dict[str, Any] = {"name": "read"}
    if response is not None:
        answer["response"] = response
    contents = [user(QUESTION), {"role": "user", "parts": [{"functionResponse": answer}]}]
    assert messages_of(body(contents=contents))[-1]["content"] == text


def test_a_content_of_function_responses_only_leaves_the_question_the_last_user_message():
    model = {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {}}}]}
    request = parse_gemini_request(body(contents=[user(QUESTION), model, answer]), WHOLE)
    assert [m["role"] for m in request.messages] == ["user", "assistant", "tool"]
    assert last_user_text(request.messages) == QUESTION


def test_text_next_to_function_responses_comes_after_them_as_a_user_message():
    answer = {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "read", "response": {"output": "A."}}},
            {"text": "And now? [[mock:clean#k2]]"},
        ],
    }
    messages = messages_of(body(contents=[user(QUESTION), answer]))
    assert [m["role"] for m in messages] == ["user", "tool", "user"]
    assert last_user_text(messages) == "And now? [[mock:clean#k2]]"


def test_a_user_content_without_text_is_still_the_users_turn():
    image = {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}
    assert messages_of(body(contents=[user(QUESTION), image]))[-1] == {
        "role": "user",
        "content": "",
    }


def test_fields_are_read_by_their_snake_case_names_too():
    raw = json.dumps(
        {
            "system_instruction": {"parts": [{"text": "Be terse."}]},
            "contents": [
                user(QUESTION),
                {"role": "model", "parts": [{"function_call": {"name": "read", "args": {}}}]},
                {
                    "role": "tool",
                    "parts": [{"function_response": {"name": "read", "response": {}}}],
                },
            ],
            "tools": [{"function_declarations": [{"name": "read"}]}],
            "generation_config": {
                "candidate_count": 1,
                "thinking_config": {"include_thoughts": True},
            },
        }
    ).encode()
    request = parse_gemini_request(raw, WHOLE)
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert offered_tools(request) == ("read",)


def test_one_object_stands_for_a_list_of_one_as_in_googles_curl_examples():
    raw = json.dumps(
        {
            "system_instruction": {"parts": {"text": "You are a cat."}},
            "contents": {"parts": {"text": "Hello there [[mock:clean#k3]]"}},
            "tools": {"functionDeclarations": {"name": "read"}},
        }
    ).encode()
    request = parse_gemini_request(raw, WHOLE)
    assert request.messages == [
        {"role": "system", "content": "You are a cat."},
        {"role": "user", "content": "Hello there [[mock:clean#k3]]"},
    ]
    assert offered_tools(request) == ("read",)


def test_the_offered_tools_are_the_function_declarations_and_other_tools_are_skipped():
    tools = [
        {"googleSearch": {}},
        {
            "functionDeclarations": [
                {"name": "read", "parameters": {"type": "OBJECT"}},
                {"name": "grep"},
            ]
        },
        {"codeExecution": {}, "functionDeclarations": [{"name": "list"}]},
    ]
    assert offered_tools(parse_gemini_request(body(tools=tools), WHOLE)) == ("read", "grep", "list")


def test_no_tools_offers_none():
    assert offered_tools(parse_gemini_request(body(), WHOLE)) == ()


HUGE = "x" * 1_000_000


@pytest.mark.parametrize(
    ("raw", "param", "message"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"\xff\xfe", None, "not valid JSON"),
        (b"[1]", None, "must be a JSON object"),
        (b"[" * 65 + b"]" * 65, None, "nests deeper than 64 levels"),
        (body(contents=...), "contents", "contents is not specified"),
        (body(contents=[]), "contents", "contents is not specified"),
        (body(contents=3), "contents", "must be a list"),
        (body(contents="hi"), "contents", "must be a list"),
        (body(contents=["hi"]), "contents[0]", "must be an object"),
        (
            body(contents=[{"role": "robot", "parts": [{"text": "x"}]}]),
            "contents[0].role",
            "got 'robot'",
        ),
        (body(contents=[{"role": 3, "parts": [{"text": "x"}]}]), "contents[0].role", "got 3"),
        (body(contents=[{"role": [], "parts": [{"text": "x"}]}]), "contents[0].role", "got []"),
        (
            body(contents=[{"role": HUGE, "parts": [{"text": "x"}]}]),
            "contents[0].role",
            "must be one",
        ),
        (body(contents=[{"role": "user"}]), "contents[0].parts", "must not be empty"),
        (body(contents=[{"role": "user", "parts": []}]), "contents[0].parts", "must not be empty"),
        (body(contents=[{"parts": "hi"}]), "contents[0].parts", "must be a list"),
        (body(contents=[{"parts": ["hi"]}]), "contents[0].parts[0]", "must be an object"),
        (
            body(contents=[{"parts": [{"text": 3}]}]),
            "contents[0].parts[0].text",
            "must be a string",
        ),
        (
            body(contents=[{"parts": [{"text": "x", "thought": "yes"}]}]),
            "contents[0].parts[0].thought",
            "boolean",
        ),
        (
            body(contents=[{"role": "model", "parts": [{"functionCall": "read"}]}]),
            "contents[0].parts[0].functionCall",
            "must be an object",
        ),
        (
            body(contents=[{"role": "model", "parts": [{"functionCall": {"args": {}}}]}]),
            "contents[0].parts[0].functionCall.name",
            "non-empty string",
        ),
        (
            body(contents=[{"role": "model", "parts": [{"functionCall": {"name": ""}}]}]),
            "contents[0].parts[0].functionCall.name",
            "non-empty string",
        ),
        (
            body(
                contents=[
                    {"role": "model", "parts": [{"functionCall": {"name": "r", "args": [1]}}]}
                ]
            ),
            "contents[0].parts[0].functionCall.args",
            "must be an object",
        ),
        (
            body(contents=[{"role": "model", "parts": [{"functionCall": {"name": "r", "id": 7}}]}]),
            "contents[0].parts[0].functionCall.id",
            "must be a string",
        ),
        (
            body(contents=[{"parts": [{"functionResponse": {"name": "r", "response": "ok"}}]}]),
            "contents[0].parts[0].functionResponse.response",
            "must be an object",
        ),
        (
            body(contents=[{"parts": [{"functionResponse": {"response": {}}}]}]),
            "contents[0].parts[0].functionResponse.name",
            "non-empty string",
        ),
        (body(systemInstruction="Be terse."), "systemInstruction", "must be an object"),
        (body(systemInstruction={"parts": 3}), "systemInstruction.parts", "must be a list"),
        (
            body(systemInstruction={"parts": [{"text": ["x"]}]}),
            "systemInstruction.parts[0].text",
            "string",
        ),
        (body(tools="read"), "tools", "must be a list"),
        (body(tools=["read"]), "tools[0]", "must be an object"),
        (body(tools=[{"functionDeclarations": "read"}]), "tools[0].functionDeclarations", "a list"),
        (
            body(tools=[{"functionDeclarations": [3]}]),
            "tools[0].functionDeclarations[0]",
            "an object",
        ),
        (
            body(tools=[{"functionDeclarations": [{"description": "x"}]}]),
            "tools[0].functionDeclarations[0].name",
            "non-empty string",
        ),
        (body(generationConfig=[]), "generationConfig", "must be an object"),
        (
            body(generationConfig={"candidateCount": 2}),
            "generationConfig.candidateCount",
            "one candidate",
        ),
        (
            body(generationConfig={"candidateCount": True}),
            "generationConfig.candidateCount",
            "must be 1",
        ),
        (
            body(generationConfig={"thinkingConfig": "high"}),
            "generationConfig.thinkingConfig",
            "an object",
        ),
    ],
)
def test_a_bad_body_is_a_bad_request_naming_the_field(raw: bytes, param: str | None, message: str):
    with pytest.raises(RequestError) as caught:
        parse_gemini_request(raw, WHOLE)
    assert (caught.value.status, caught.value.param) == (400, param)
    assert message in caught.value.message


def test_a_huge_text_is_read_whole():
    request = parse_gemini_request(body(contents=[user(HUGE + " [[mock:clean#k4]]")]), WHOLE)
    assert last_user_text(request.messages).endswith("[[mock:clean#k4]]")


def refusal(raw: bytes) -> RequestError | None:
    """The RequestError refusing `raw`, None when it is read (anything else is raised)."""
    try:
        parse_gemini_request(raw, STREAM, "sse")
    except RequestError as refused:
        return refused
    return None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(
            ["role", "parts", "text", "thought", "functionCall", "functionResponse", "name",
             "args", "response", "id", "functionDeclarations", "candidateCount", "x"]
        ),
        inner,
        max_size=4,
    ),
    max_leaves=20,
)  # fmt: skip


@given(
    fields=st.dictionaries(
        st.sampled_from(
            ["contents", "systemInstruction", "system_instruction", "tools", "generationConfig"]
        ),
        json_values,
    )
)
def test_any_json_body_is_read_or_refused_with_a_request_error(fields: dict[str, Any]):
    refused = refusal(json.dumps(fields).encode())
    assert refused is None or (refused.status, bool(refused.message)) == (400, True)
