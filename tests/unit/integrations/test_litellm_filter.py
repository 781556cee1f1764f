"""scaffold_guard.integrations.litellm_filter: what LiteLLM's chunk and completion objects become.

Driven with real `litellm` objects (ModelResponseStream, ModelResponse) shaped as LiteLLM's
proxy hands them to a guardrail. The built-in flows' `expect` blocks are the oracle for the
flows; hand-written rows pin each clause; hypothesis cuts texts at any offsets.
"""

from __future__ import annotations

import itertools
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from litellm import ModelResponseStream

from guardrail.model_profiles import registry_for
from guardrail.policy import CORRECTION_INSTRUCTION, scrub
from guardrail.registries import DEFAULT_REGISTRY
from mock_llm import builtin_flows
from scaffold_guard.integrations.litellm_filter import (
    CompletionFilter,
    StreamFilter,
    recovery_request,
    single_choice,
)

from ...support.families import EVERY_FAMILY, hidden_canary
from ...support.litellm_chunks import (
    CREATED,
    ID,
    MODEL,
    THIRD_PARTY_WARNINGS,
    chunk,
    completion,
    finishes,
    roles,
    shown,
    stream,
    usage_chunk,
)
from ..helpers.scaffolding import HARMONY_ANSWER, HARMONY_REASONING, HARMONY_REPLY

pytestmark = THIRD_PARTY_WARNINGS

SPAN = "<|tool_call_start|>[read(path='/homelab/x.md')]<|tool_call_end|>"
TOOL_CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read"}}
FLOWS = builtin_flows()
ANSWERED = sorted(
    name
    for name, flow in FLOWS.items()
    if flow.expect is not None and not flow.steps[0].tool_calls and flow.steps[0].fault is None
)
OTHER = ("chatcmpl-recovery", 1_800_000_000, "other-model")


def run(
    chunks: list[ModelResponseStream], guard: StreamFilter | None = None
) -> tuple[StreamFilter, list[ModelResponseStream]]:
    guard = guard or StreamFilter(DEFAULT_REGISTRY)
    out = [c for c in map(guard.chunk, chunks) if c is not None]
    return guard, out + guard.end()


def cut(text: str, offsets: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(o % (len(text) + 1) for o in offsets)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


# --- the clauses, row by row ---------------------------------------------------------------

ROWS = [
    ("G1 clean text", ["Backups run ", "nightly."], "Backups run nightly."),
    ("G4 mixed", ["See ", SPAN, " the notes."], "See  the notes."),
    ("G5 split span", ["Hi <|tool_ca", "ll_start|>[x]<|tool_", "call_end|>there"], "Hi there"),
    ("G6 standalone tokens", ["a<|tool_calls|>b", "<|tool_", "call|>c"], "abc"),
    ("G7 words", ["tool_call and tool_call_start"], "tool_call and tool_call_start"),
    ("G7 unknown token", ["<|some_other_token|>"], "<|some_other_token|>"),
    ("G7 lone end", ["x <|tool_call_end|> y"], "x <|tool_call_end|> y"),
    ("G8 partial start at the end", ["log reads <|tool_call_st"], "log reads <|tool_call_st"),
    ("G8 unterminated span", ["ok. <|tool_call_start|>[read(", "path='/x')]"], "ok. "),
]


@pytest.mark.parametrize("finish", [True, False], ids=["finish", "no-finish"])
@pytest.mark.parametrize(("pieces", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_each_clause_shows_what_it_should(pieces: list[str], expected: str, finish: bool):
    guard, out = run(stream(pieces, finish=finish))
    assert shown(out) == expected
    assert not guard.ended_empty


@pytest.mark.parametrize("model", ["lfm2", EVERY_FAMILY], ids=["lfm2", "every-family"])
@pytest.mark.parametrize("name", ANSWERED)
def test_each_flows_first_answer_streams_as_its_expect_block_says(name: str, model: str):
    """Under `auto`'s registry for `model`: a family flow's expect block for that model."""
    flow = FLOWS[name]
    expect = flow.expect_for(model)
    assert expect is not None
    chunks = stream(cut(flow.steps[0].content, list(range(0, 400, 7))))
    guard, out = run(chunks, StreamFilter(registry_for(model)))
    assert guard.wants_recovery == expect.recovery
    if not expect.recovery:
        assert shown(out) == expect.shown
        assert guard.stripped_chars == expect.stripped_chars
    if canary := hidden_canary(flow, model):
        assert canary not in shown(out)


@pytest.mark.parametrize("model", ["lfm2", EVERY_FAMILY], ids=["lfm2", "every-family"])
@pytest.mark.parametrize("name", ANSWERED)
def test_each_flows_turn_answered_whole_is_what_its_expect_block_says(name: str, model: str):
    """The first answer as one completion, then the recovery's where one is due: the text
    shown, the malformed-reply verdict and the stripped count of the whole turn."""
    flow = FLOWS[name]
    expect = flow.expect_for(model)
    assert expect is not None
    guard = CompletionFilter(registry_for(model))
    whole = completion(flow.steps[0].content)
    guard.filter(whole)
    assert guard.wants_recovery == expect.recovery
    stripped = guard.stripped_chars
    if expect.recovery:
        guard = CompletionFilter(registry_for(model), follows=guard)
        whole = completion(flow.steps[1].content)
        guard.filter(whole)
        stripped += guard.stripped_chars
    text = whole.choices[0].message.content or ""
    assert guard.malformed == (expect.error == "malformed")
    assert (text, stripped) == ("" if guard.malformed else expect.shown, expect.stripped_chars)
    if canary := hidden_canary(flow, model):
        assert canary not in text


# --- chunk by chunk ----------------------------------------------------------------------------


def test_clean_chunks_come_back_as_the_same_objects_and_nothing_is_added():
    chunks = stream(["Backups ", "run <", " nightly."], usage=True)
    _, out = run(chunks)
    assert out == chunks
    assert all(a is b for a, b in zip(out, chunks, strict=True))


def test_a_held_partial_marker_goes_out_with_the_finish_chunk():
    guard = StreamFilter(DEFAULT_REGISTRY)
    first = guard.chunk(chunk("reads <|tool_"))
    assert first is not None
    assert shown([first]) == "reads "
    last = guard.chunk(chunk(finish="stop"))
    assert last is not None
    assert last.choices[0].delta.content == "<|tool_"
    assert last.choices[0].finish_reason == "stop"
    assert guard.end() == []


def test_a_stream_without_a_finish_ends_with_a_chunk_of_what_was_held():
    guard, out = run(stream(["reads <|tool_call_st"], finish=False))
    tail = out[-1]
    assert (tail.id, tail.created, tail.model) == (ID, CREATED, MODEL)
    assert tail.choices[0].delta.content == "<|tool_call_st"
    assert tail.choices[0].index == 0
    assert guard.end() == []


def test_a_chunk_with_nothing_left_is_dropped_and_one_that_still_says_something_is_not():
    guard = StreamFilter(DEFAULT_REGISTRY)
    assert guard.chunk(chunk("See ")) is not None
    assert guard.chunk(chunk(SPAN)) is None
    kept = guard.chunk(chunk(SPAN, reasoning_content="thinking"))
    assert kept is not None
    assert kept.choices[0].delta.content is None
    assert kept.choices[0].delta.reasoning_content == "thinking"


def test_a_chunk_left_without_text_but_with_usage_is_kept():
    guard = StreamFilter(DEFAULT_REGISTRY)
    last = usage_chunk()
    last.choices[0].delta.content = "<|tool_calls|>"
    assert guard.chunk(last) is last
    assert last.choices[0].delta.content is None


def test_the_role_chunk_passes_whatever_follows():
    _, out = run(stream([SPAN, " ok"]))
    assert roles(out) == ["assistant"]
    assert shown(out) == " ok"


def test_reasoning_is_never_filtered():
    raw = f"I could call {SPAN} here"
    guard, out = run([chunk("", role="assistant", reasoning_content=raw), chunk("Answer.")])
    assert out[0].choices[0].delta.reasoning_content == raw
    assert shown(out) == "Answer."
    assert guard.stripped_chars == 0


@given(st.lists(st.integers(0, 200), max_size=8))
def test_harmony_analysis_in_the_content_goes_out_as_reasoning_content(offsets: list[int]):
    guard = StreamFilter(registry_for("gpt-oss-20b"))
    _, out = run(stream(cut(HARMONY_REPLY, offsets)), guard)
    thought = "".join(
        getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in out if c.choices
    )
    assert (shown(out), thought) == (HARMONY_ANSWER, HARMONY_REASONING)


def test_a_whole_completions_harmony_analysis_goes_to_its_reasoning_content():
    whole = completion(HARMONY_REPLY)
    CompletionFilter(registry_for("gpt-oss-20b")).filter(whole)
    message = whole.choices[0].message
    assert (message.content, message.reasoning_content) == (HARMONY_ANSWER, HARMONY_REASONING)


def test_tool_calls_pass_untouched_and_a_round_with_one_never_recovers():
    tool_chunk = chunk(SPAN, tool_calls=[TOOL_CALL])
    guard, out = run([chunk("", role="assistant"), tool_chunk, chunk(finish="tool_calls")])
    assert out[1] is tool_chunk
    tool_calls = tool_chunk.choices[0].delta.tool_calls
    assert tool_calls is not None
    assert tool_calls[0].id == "call_1"
    assert shown(out) == ""
    assert guard.stripped_chars == len(SPAN)
    assert not guard.ended_empty


def test_each_choice_has_a_filter_of_its_own():
    chunks = [
        chunk("one <|tool_call_", index=0),
        chunk("two <|tool_", index=1),
        chunk("start|>[x]<|tool_call_end|>!", index=0),
        chunk("x", index=1),
    ]
    _, out = run(chunks, StreamFilter(DEFAULT_REGISTRY, single=False))
    assert shown(out, 0) == "one !"
    assert shown(out, 1) == "two <|tool_x"


def test_a_reply_of_several_choices_never_recovers():
    chunks = [chunk(SPAN, index=0), chunk(SPAN, index=1), chunk(finish="stop")]
    guard, out = run(chunks, StreamFilter(DEFAULT_REGISTRY, single=False))
    assert not guard.ended_empty
    assert finishes(out) == ["stop"]


def test_a_reply_of_nothing_but_markup_recovers_at_its_finish_and_drops_the_rest():
    guard = StreamFilter(DEFAULT_REGISTRY)
    out = [guard.chunk(c) for c in stream([SPAN, "\n"], usage=True)]
    assert shown([c for c in out if c is not None]) == "\n"
    assert out[-2:] == [None, None]  # the finish and the usage chunk
    assert guard.ended_empty
    assert guard.end() == []
    assert guard.stripped_chars == len(SPAN)
    assert guard.first_span == SPAN


def test_a_reply_of_nothing_but_markup_cut_before_its_finish_recovers_too():
    guard, out = run(stream([SPAN], finish=False))
    assert guard.ended_empty
    assert shown(out) == ""


def test_a_reply_that_stripped_nothing_and_showed_nothing_does_not_recover():
    guard, _ = run(stream([""]))
    assert not guard.ended_empty


def test_the_recovery_takes_the_first_replys_identity_and_loses_its_role():
    first, _ = run(stream([SPAN]))
    second, out = run(
        stream(["Fine", "."], identity=OTHER), StreamFilter(DEFAULT_REGISTRY, follows=first)
    )
    assert {(c.id, c.created, c.model) for c in out} == {(ID, CREATED, MODEL)}
    assert roles(out) == []
    assert shown(out) == "Fine."
    assert not second.ended_empty
    assert not second.malformed


def test_a_recovery_that_shows_nothing_is_malformed_and_its_finish_is_dropped():
    first, _ = run(stream([SPAN]))
    second = StreamFilter(DEFAULT_REGISTRY, follows=first)
    out = [second.chunk(c) for c in stream([SPAN, "  "], usage=True)]
    assert second.malformed
    assert second.ended_empty
    assert out[-2:] == [None, None]  # the finish and the usage chunk
    assert finishes([c for c in out if c is not None]) == []
    assert not second.wants_recovery


def test_a_recovery_that_shows_nothing_and_never_finishes_is_malformed_too():
    first, _ = run(stream([SPAN]))
    second, _ = run(stream([SPAN], finish=False), StreamFilter(DEFAULT_REGISTRY, follows=first))
    assert second.malformed
    assert second.ended_empty


@pytest.mark.parametrize("content", [["a", "list"], 7], ids=["list", "int"])
def test_content_that_is_not_text_passes_untouched(content: object):
    weird = chunk("x")
    weird.choices[0].delta.content = cast(Any, content)
    guard, out = run([weird])
    assert out == [weird]
    assert weird.choices[0].delta.content == content
    assert guard.stripped_chars == 0


def test_a_choice_index_that_is_not_a_number_counts_as_the_first():
    odd = chunk("a <|tool_")
    odd.choices[0].index = cast(Any, "zero")
    _, out = run([odd, chunk("calls|>b")])
    assert "".join(c.choices[0].delta.content or "" for c in out) == "a b"


def test_text_after_a_choices_finish_goes_through_a_fresh_filter():
    guard, out = run([chunk("a", finish="stop"), chunk(f"late {SPAN}"), chunk("<|tool_")])
    assert shown(out) == "alate <|tool_"
    assert guard.stripped_chars == len(SPAN)


# --- any chunking -----------------------------------------------------------------------------

MARKUP = st.sampled_from(
    [SPAN, "<|tool_calls|>", "<|tool_call|>", "<|tool_call_start|>", "<|tool_call_end|>", "<|"]
)
PROSE = st.text(alphabet="ab <|>_\n", max_size=12)
TEXTS = st.lists(st.one_of(MARKUP, PROSE), max_size=8).map("".join)


@given(text=TEXTS, offsets=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_any_chunking_shows_what_the_whole_text_shows(text: str, offsets: list[int]):
    guard, out = run(stream(cut(text, offsets)))
    whole = scrub(text, DEFAULT_REGISTRY)
    if guard.ended_empty:
        assert not whole.strip()
    else:
        assert shown(out) == whole
    for c in out:
        assert "<|tool_call_start|>" not in (c.choices[0].delta.content or "")


@given(text=TEXTS, offsets=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_any_chunking_of_a_recovery_shows_what_the_whole_text_shows(text: str, offsets: list[int]):
    first, _ = run(stream([SPAN]))
    second, out = run(stream(cut(text, offsets)), StreamFilter(DEFAULT_REGISTRY, follows=first))
    assert shown(out) == scrub(text, DEFAULT_REGISTRY)
    assert second.malformed == (not shown(out).strip())


# --- whole completions ---------------------------------------------------------------------


@pytest.mark.parametrize(("pieces", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_each_clause_shows_what_it_should_in_a_whole_completion(pieces: list[str], expected: str):
    guard = CompletionFilter(DEFAULT_REGISTRY)
    whole = completion("".join(pieces))
    guard.filter(whole)
    assert whole.choices[0].message.content == expected
    assert not guard.wants_recovery


def test_a_whole_completion_of_nothing_but_markup_wants_the_recovery():
    guard = CompletionFilter(DEFAULT_REGISTRY)
    whole = completion(SPAN)
    guard.filter(whole)
    assert whole.choices[0].message.content == ""
    assert guard.wants_recovery
    assert guard.first_span == SPAN


def test_a_whole_completion_with_a_tool_call_never_wants_the_recovery():
    guard = CompletionFilter(DEFAULT_REGISTRY)
    whole = completion(
        SPAN, tool_calls=[{**TOOL_CALL, "function": {"name": "read", "arguments": "{}"}}]
    )
    guard.filter(whole)
    assert not guard.wants_recovery
    assert whole.choices[0].message.tool_calls is not None


def test_every_choice_of_a_whole_completion_is_filtered():
    guard = CompletionFilter(DEFAULT_REGISTRY, single=False)
    whole = completion(f"a{SPAN}", SPAN, None)
    guard.filter(whole)
    assert [c.message.content for c in whole.choices] == ["a", "", None]
    assert not guard.wants_recovery


def test_a_whole_recovery_takes_the_first_identity_and_says_when_it_is_malformed():
    first = CompletionFilter(DEFAULT_REGISTRY)
    first.filter(completion(SPAN))
    for content, malformed in [("Fine.", False), (f"{SPAN} ", True)]:
        second = CompletionFilter(DEFAULT_REGISTRY, follows=first)
        recovery = completion(content, identity=OTHER)
        second.filter(recovery)
        assert (recovery.id, recovery.created, recovery.model) == (ID, CREATED, MODEL)
        assert second.malformed == malformed


def test_a_whole_completion_choice_without_a_message_is_left_alone():
    whole = completion("ok")
    whole.choices[0].message = cast(Any, None)
    guard = CompletionFilter(DEFAULT_REGISTRY)
    guard.filter(whole)
    assert guard.stripped_chars == 0


# --- the recovery request -------------------------------------------------------------------

REQUEST: dict[str, Any] = {
    "model": "lfm2",
    "messages": [
        {"role": "system", "content": "You answer from notes."},
        {"role": "user", "content": "When?"},
    ],
    "stream": True,
    "stream_options": {"include_usage": True},
    "temperature": 0.2,
    "max_tokens": 50,
    "tools": [{"type": "function", "function": {"name": "read"}}],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "functions": [{"name": "read"}],
    "function_call": "auto",
    "metadata": {"user_api_key": "sk-secret"},
    "litellm_call_id": "abc",
    "proxy_server_request": {"body": {}},
    "api_base": "http://127.0.0.1:1/v1",
    "api_key": "x",
}


def test_the_recovery_asks_the_same_model_with_the_correction_and_no_tools():
    assert recovery_request(REQUEST, stream=True, endpoint=False) == {
        "model": "lfm2",
        "messages": [
            {"role": "system", "content": f"You answer from notes.\n\n{CORRECTION_INSTRUCTION}"},
            {"role": "user", "content": "When?"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.2,
        "max_tokens": 50,
    }


def test_a_whole_recovery_is_not_streamed_and_an_endpoint_is_kept_when_asked():
    kwargs = recovery_request(REQUEST, stream=False, endpoint=True)
    assert "stream" not in kwargs
    assert "stream_options" not in kwargs
    assert (kwargs["api_base"], kwargs["api_key"]) == ("http://127.0.0.1:1/v1", "x")


@pytest.mark.parametrize("messages", [None, "text", [1, "two", {"role": "user", "content": "q"}]])
def test_messages_that_are_not_a_list_of_objects_leave_only_the_objects(messages: object):
    kwargs = recovery_request({"model": "m", "messages": messages}, stream=False, endpoint=False)
    users = [{"role": "user", "content": "q"}] if isinstance(messages, list) else []
    assert kwargs["messages"] == [{"role": "system", "content": CORRECTION_INSTRUCTION}, *users]


@pytest.mark.parametrize(("n", "single"), [(None, True), (1, True), (2, False), ("1", False)])
def test_only_a_request_for_one_choice_is_single(n: object, single: bool):
    request = {} if n is None else {"n": n}
    assert single_choice(request) == single
