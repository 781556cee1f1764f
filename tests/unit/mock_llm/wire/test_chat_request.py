from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_llm.wire.chat_request import (
    RequestError,
    json_depth_over,
    offered_tools,
    parse_chat_request,
)


def body(**fields: object) -> bytes:
    base: dict[str, object] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}).encode()


def test_valid_request_is_parsed():
    chat = parse_chat_request(body(stream=True, stream_options={"include_usage": True}))
    assert (chat.model, chat.stream, chat.include_usage) == ("m", True, True)
    assert chat.messages == [{"role": "user", "content": "hi"}]


def test_stream_defaults_to_false_and_usage_to_off():
    chat = parse_chat_request(body())
    assert (chat.stream, chat.include_usage) == (False, False)


@pytest.mark.parametrize(
    ("raw", "param", "message"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"\xff\xfe", None, "not valid JSON"),
        (b"[1, 2]", None, "must be a JSON object"),
        (body(model=...), "model", "model parameter"),
        (body(model=""), "model", "model parameter"),
        (body(messages=...), "messages", "non-empty list"),
        (body(messages=[]), "messages", "non-empty list"),
        (body(messages="hi"), "messages", "non-empty list"),
        (body(messages=["hi"]), "messages[0]", "must be an object"),
        (body(messages=[{"content": "x"}]), "messages[0].role", "role must be one of"),
        (body(messages=[{"role": "robot", "content": "x"}]), "messages[0].role", "got 'robot'"),
        (body(stream="yes"), "stream", "must be a boolean"),
        (body(n=2), "n", "'n' must be 1"),
        (body(tools={"name": "read"}), "tools", "must be a list"),
        (body(stream_options=True), "stream_options", "must be an object"),
        (body(stream_options={"include_usage": "yes"}), "stream_options", "include_usage"),
    ],
)
def test_bad_request_names_the_parameter(raw: bytes, param: str | None, message: str):
    with pytest.raises(RequestError) as caught:
        parse_chat_request(raw)
    assert caught.value.param == param
    assert message in caught.value.message
    assert caught.value.status == 400


def test_offered_tools_are_the_function_names_and_malformed_entries_are_skipped():
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "function", "function": {"name": "read"}},
            {"type": "function", "function": {"name": 7}},
            {"type": "function"},
            "grep",
            {"type": "function", "function": {"name": "list"}},
        ],
    }
    chat = parse_chat_request(json.dumps(body).encode())
    assert offered_tools(chat) == ("read", "list")


@pytest.mark.parametrize(
    ("raw", "over"),
    [
        (b"[" * 64 + b"]" * 64, False),
        (b"[" * 65 + b"]" * 65, True),
        (b'{"a": "' + b"[" * 500 + b'"}', False),  # brackets inside a string do not nest
        (b'{"a": "\\"' + b"[" * 500 + b'"}', False),  # nor after an escaped quote
        (b"{" * 65, True),  # invalid JSON is counted all the same
        (b'{"a": "' + b"[" * 500, False),  # a string never closed runs to the end
        (b'{"a": "\\\\"' + b"[" * 500, True),  # an escaped backslash does not escape the quote
    ],
    ids=[
        "at-limit",
        "over-limit",
        "in-a-string",
        "after-an-escaped-quote",
        "unclosed",
        "unterminated-string",
        "after-an-escaped-backslash",
    ],
)
def test_json_depth_is_counted_outside_strings(raw: bytes, over: bool):
    assert json_depth_over(raw) is over


def _depth_over_byte_by_byte(raw: bytes, limit: int) -> bool:
    """The first implementation, a byte-by-byte walk: the oracle for the fast one."""
    depth = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


@settings(max_examples=3 * settings().max_examples)
@given(
    raw=st.lists(st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b"a", b"\n", b"\xff"])).map(
        b"".join
    ),
    limit=st.integers(0, 6),
)
def test_json_depth_agrees_with_a_byte_by_byte_walk(raw: bytes, limit: int):
    assert json_depth_over(raw, limit) is _depth_over_byte_by_byte(raw, limit)


def test_a_body_nested_deeper_than_the_limit_is_refused_before_parsing():
    with pytest.raises(RequestError, match="nests deeper than 64 levels"):
        parse_chat_request(b'{"model": "m", "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}")


@pytest.mark.parametrize(
    "content",
    [42, {"text": "[[mock:clean]]"}, ["[[mock:clean]]"], [{"type": "text"}, 7], True],
    ids=["number", "object", "list-of-strings", "list-with-a-number", "boolean"],
)
def test_content_that_is_not_text_or_parts_is_refused_naming_the_message(content: object):
    """Regression (issue 12): such content was read as no text, and its trigger lost."""
    raw = body(messages=[{"role": "system", "content": "s"}, {"role": "user", "content": content}])
    with pytest.raises(RequestError) as caught:
        parse_chat_request(raw)
    assert caught.value.param == "messages[1].content"
    assert "must be a string or a list of content parts" in caught.value.message


@pytest.mark.parametrize("content", ["hi", None, [{"type": "text", "text": "hi"}], []])
def test_text_null_and_content_parts_are_accepted(content: object):
    raw = body(messages=[{"role": "user", "content": content}])
    assert parse_chat_request(raw).messages[0].get("content") == content
