"""A reply of nothing but a Python list of calls (Llama 3.2 to 4's, which have no marker)
is a call; any other reply is read as text (guardrail/pythonic_reply.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrail import registry_for
from guardrail.json_reply import HOLD_LIMIT
from guardrail.pythonic_reply import PythonicCalls, is_pythonic_call
from guardrail.registries import registry_with
from guardrail.scaffolding import ScaffoldingFilter

from ..helpers.scaffolding import chunked, run

LLAMA = registry_for("Llama-3.2-3B-Instruct")
CALL = "[get_weather(city='San Francisco', metric='celsius')]"


@pytest.mark.parametrize(
    "reply",
    [
        CALL,  # vllm tests/tool_parsers/test_llama4_pythonic_tool_parser.py
        "[get_user_info(user_id=7890, special='black')]",  # Meta's Llama 3.2 prompt format
        "[get_weather(city='San Francisco', metric='celsius'), register_user(name='John Doe',"
        " age=37, address={'city': 'San Francisco', 'state': 'CA'}, role=None,"
        " passed_test=True, aliases=['John', 'Johnny'])]",  # vllm pythonic parser tests
        "[do_something_cool()]",
        ' \n[brave_search.call(query="a ) ] , [ b", n=-1.5)]\n',
        "[f(s='it\\'s', t=\"]\")]",
        "[get_user_info(user_id=7890, special='black')]<|eot_id|>",  # Meta's Llama 3.2 format
        f"{CALL}<|eot|>\n",  # Llama 4's turn end
        # Meta's llama3_1 format: a built-in call, its <|python_tag|> dropped by the server
        'brave_search.call(query="latest price of 1oz gold")',
        'wolfram_alpha.call(query="solve x^2 = 4")<|eom_id|>',
    ],
)
def test_a_reply_of_nothing_but_a_list_of_calls_is_stripped_whole_at_any_chunking(reply: str):
    for size in (1, 7, len(reply)):
        shown, f = run(chunked(reply, size), LLAMA)
        assert (shown, f.stripped_chars) == ("", len(reply)), size


@pytest.mark.parametrize(
    "reply",
    [
        "[1] The first point.",
        "[Backups](https://example.com/backups) run nightly.",
        "[get_weather(city='Paris')] is how the call looks.",
        "Call it as [get_weather(city='Paris')].",
        "[get_weather('Paris')]",  # a positional argument: not the format's
        "[get_weather(city=lookup())]",  # not a literal
        "[get_weather(**args)]",
        "[get_weather(city='Paris')",  # never closed
        "[]",
        "```python\n[get_weather(city='Paris')]\n```",
        "[" * 300 + "]" * 300,
    ],
)
def test_any_other_reply_is_shown_as_it_came(reply: str):
    shown, f = run(chunked(reply, 3), LLAMA)
    assert (shown, f.stripped_chars) == (reply, 0)


def test_a_reply_that_cannot_be_calls_is_decided_at_once():
    f = ScaffoldingFilter(LLAMA)
    assert f.feed("[1") == "[1"
    assert f.held == ""


def test_the_reply_is_held_only_while_it_may_still_be_calls():
    f = ScaffoldingFilter(LLAMA)
    assert f.feed("[get_weather(city=") == ""
    assert f.feed("'Paris')] and more") == "[get_weather(city='Paris')] and more"


def test_a_json_reply_and_a_pythonic_reply_are_both_calls_for_a_llama_name():
    for reply in ('{"name": "f", "parameters": {}}', "[f(a=1)]"):
        assert run(chunked(reply, 2), LLAMA)[0] == ""


def test_a_reply_longer_than_the_hold_limit_is_shown():
    long_call = "[f(s='" + "x" * HOLD_LIMIT + "')]"
    shown, _ = run(chunked(long_call, 1000), LLAMA)
    assert shown == long_call


def test_without_the_profile_a_list_of_calls_is_text():
    assert run([CALL], registry_with("llama"))[0] == CALL


@pytest.mark.parametrize(
    ("source", "call"),
    [
        ("f(a=1, b='x', c=[1, {'k': None}], d=-2.5)", True),
        ("mod.f()", True),
        ("f(1)", False),
        ("f(a=g())", False),
        ("f(**kw)", False),
        ("(lambda: 1)()", False),
        ("f(a=1", False),
        ("f(a=" + "[" * 500 + "]" * 500 + ")", False),  # past the parser's nesting limit
    ],
)
def test_a_call_is_a_name_and_literal_keyword_arguments(source: str, call: bool):
    assert is_pythonic_call(source) is call


PYTHONISH = st.text(alphabet="[]()f=a1'\", .\n\\", max_size=40)


@given(PYTHONISH, st.data())
def test_any_reply_reads_the_same_however_it_is_chunked(reply: str, data: st.DataObject):
    """Whole or cut anywhere, the reply is shown or stripped alike, and shown as it came or
    not at all: a reply is never partly eaten by this rule."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(reply)), max_size=4)))
    pieces = [reply[a:b] for a, b in zip([0, *cuts], [*cuts, len(reply)], strict=True)]
    registry = registry_with("llama-pythonic")
    whole = run([reply], registry)[0]
    assert run(pieces, registry)[0] == whole
    reader = PythonicCalls()
    reader.feed(reply)
    assert whole == ("" if reader.complete() else reply)


@pytest.mark.parametrize("model", ["gemma3:12b", "google/gemma-3-27b-it"])
def test_a_gemma_names_reply_of_calls_is_a_call_as_googles_guide_prompts_it(model: str):
    reply = '[get_product_name_by_PID(PID="807ZPKBL9V")]'
    assert run([reply], registry_for(model))[0] == ""


@pytest.mark.parametrize(
    "reply",
    ['get_weather(location="Seattle")', "brave search is a tool", "bravely done.", "b"],
)
def test_only_a_built_in_call_counts_without_a_list(reply: str):
    assert run([reply], LLAMA)[0] == reply


def test_a_reply_that_names_no_built_in_is_decided_at_its_first_letter_that_none_has():
    reader = PythonicCalls()
    assert reader.feed("bra") == "maybe"
    assert reader.feed("x") == "no"
    assert PythonicCalls().feed("B") == "no"
