"""A reply of nothing but JSON calls (Llama 3.x's, which have no marker) is a call; any
other reply, JSON or not, is read as text (guardrail/json_reply.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrail.json_reply import HOLD_LIMIT, ReplyCalls, is_call
from guardrail.registries import registry_with
from guardrail.scaffolding import ScaffoldingFilter

from ..helpers.scaffolding import chunked, run

LLAMA = registry_with("llama", "llama-json")
CALL = '{"name": "get_weather", "parameters": {"city": "Paris"}}'


@pytest.mark.parametrize(
    "reply",
    [
        CALL,
        f"{CALL}; {CALL}",
        f" \n{CALL};\n{CALL}\n",
        '{"type": "function", "name": "f", "arguments": {"q": "} ; {"}}',
        r'{"name": "f", "parameters": {"q": "a \"quoted\" } and a \\"}}',  # escapes in a string
        '{"parameters": {}, "name": "f.g-h"}',
        f"{CALL};",  # `;` joins calls: a trailing one leaves nothing but calls
        f"{CALL}<|eom_id|>",  # Meta's prompt format: a call reply ends with the turn's token
        f"{CALL}; {CALL}<|eot_id|>\n",
        f"{CALL}<|eot|>",  # Llama 4's
        f"{CALL}\n</tool_call>",  # ollama #13968: a stray closer after a Qwen reply's call
    ],
)
def test_a_reply_of_nothing_but_calls_is_stripped_whole_at_any_chunking(reply: str):
    for size in (1, 7, len(reply)):
        shown, f = run(chunked(reply, size), LLAMA)
        assert (shown, f.stripped_chars) == ("", len(reply))
    assert f.stripped_spans == reply.count('"name"')


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "Alice", "age": 30}',
        f"Sure. {CALL}",
        f"{CALL} That is the call.",
        f"[{CALL}]",
        f"{CALL}<|eo",  # a token cut short
        f"{CALL}<b>",
        '{"name": "f", "parameters": {}, "extra": 1}',
        '{"name": "f", "parameters": {}',
        "   ",
        "",
    ],
)
def test_any_other_reply_is_shown_as_it_came(reply: str):
    shown, f = run(chunked(reply, 3), LLAMA)
    assert (shown, f.stripped_chars) == (reply, 0)


@pytest.mark.parametrize("after", [" Done.", CALL])
def test_anything_after_the_turns_end_makes_the_reply_an_answer_its_token_still_stripped(
    after: str,
):
    reply = f"{CALL}<|eot_id|>{after}"
    for size in (1, 7, len(reply)):
        assert run(chunked(reply, size), LLAMA)[0] == f"{CALL}{after}"


def test_markup_in_a_reply_that_is_no_call_is_still_stripped():
    reply = '{"name": "Alice"} <|python_tag|>{"name": "f", "parameters": {}}<|eom_id|> done'
    assert run(chunked(reply, 4), LLAMA)[0] == '{"name": "Alice"}  done'


def test_the_reply_is_held_only_while_it_may_still_be_calls():
    f = ScaffoldingFilter(LLAMA)
    assert f.feed('{"name": "get_weather", ') == ""
    assert f.held == '{"name": "get_weather", '
    assert f.feed('"age": 3} and') == '{"name": "get_weather", "age": 3} and'
    assert f.held == ""


def test_a_reply_longer_than_the_hold_limit_is_shown():
    long_call = '{"name": "f", "parameters": {"s": "' + "x" * HOLD_LIMIT + '"}}'
    shown, f = run(chunked(long_call, 1000), LLAMA)
    assert (shown, f.stripped_chars) == (long_call, 0)


def test_without_the_profile_a_reply_of_calls_is_text():
    assert run([CALL], registry_with("llama"))[0] == CALL


@pytest.mark.parametrize(
    ("value", "call"),
    [
        ({"name": "f", "parameters": {}}, True),
        ({"name": "f", "arguments": {"a": 1}, "type": "function"}, True),
        ({"name": "f", "parameters": {}, "arguments": {}}, False),
        ({"name": "f", "parameters": {}, "type": "tool"}, False),
        ({"name": 3, "parameters": {}}, False),
        ({"parameters": {}}, False),
        (["f"], False),
    ],
)
def test_a_call_is_a_name_and_one_object_of_arguments(value: object, call: bool):
    assert is_call(value) is call


JSONISH = st.text(alphabet='{}[]":;, \n\\nameprtsf1', max_size=40)
CALLS = st.lists(
    st.builds(
        lambda name, args, key: json.dumps({"name": name, key: args}),
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
        st.dictionaries(st.text(max_size=4), st.text(max_size=6), max_size=2),
        st.sampled_from(["parameters", "arguments"]),
    ),
    min_size=1,
    max_size=3,
).map("; ".join)


@given(st.one_of(CALLS, JSONISH, st.tuples(CALLS, JSONISH).map("".join)), st.data())
def test_any_reply_reads_the_same_however_it_is_chunked(reply: str, data: st.DataObject):
    """Whole or cut anywhere, the reply is shown or stripped alike, and shown as it came or
    not at all: a reply is never partly eaten by this rule."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(reply)), max_size=4)))
    pieces = [reply[a:b] for a, b in zip([0, *cuts], [*cuts, len(reply)], strict=True)]
    whole = run([reply], registry_with("llama-json"))[0]
    assert run(pieces, registry_with("llama-json"))[0] == whole
    reader = ReplyCalls()
    reader.feed(reply)
    assert whole == ("" if reader.complete() else reply)
