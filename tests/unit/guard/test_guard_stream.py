"""guard.wire.chat_stream.StreamGuard and guard.wire.chat_whole.CompletionGuard: pure, chunk
by chunk."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guard.wire.chat_stream import StreamGuard, sse
from guard.wire.chat_whole import CompletionGuard
from guardrail.model_profiles import registry_for
from guardrail.policy import scrub
from guardrail.registries import DEFAULT_REGISTRY
from mock_llm.play.response_plan import RequestShape, ResponsePlan, plan_response
from servekit.openai_chunks import DONE_EVENT

from ...support.families import hidden_canary
from ..conftest import sent_body, sent_events
from ..helpers.scaffolding import HARMONY_ANSWER, HARMONY_REASONING, HARMONY_REPLY, cut_anywhere
from .test_guard_responses import ANSWERED, ASKED, FLOWS
from .test_guard_responses import META as MOCK_META

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
CALL = f"{START}[read(path='/homelab/x.md')]{END}"
META = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "m"}


def chunk(delta: dict[str, Any], finish: str | None = None, **meta: Any) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({**META, **meta, "choices": [choice]})


def play(guard: StreamGuard, payloads: list[str]) -> list[bytes] | None:
    out: list[bytes] = []
    for data in payloads:
        out += guard.chunk(data)
    rest = guard.end(done=True)
    return None if rest is None else out + rest


def content(out: list[bytes]) -> str:
    text: list[str] = []
    for event in out:
        data = event.removeprefix(b"data: ").strip()
        if data == b"[DONE]":
            continue
        for choice in json.loads(data)["choices"]:
            text.append(choice["delta"].get("content") or "")
    return "".join(text)


def stream_of(pieces: list[str]) -> list[str]:
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": p}) for p in pieces),
        chunk({}, "stop"),
    ]


@given(st.lists(st.integers(0, 200), max_size=12))
def test_clean_text_goes_out_as_the_upstreams_own_bytes_at_any_chunking(cuts: list[int]):
    payloads = stream_of(cut_anywhere("Backups run nightly at 02:00 with restic to the NAS.", cuts))
    out = play(StreamGuard(DEFAULT_REGISTRY), payloads)
    assert out == [sse(p) for p in payloads] + [DONE_EVENT]


@given(st.lists(st.integers(0, 200), max_size=12))
def test_look_alikes_reach_the_client_whole_at_any_chunking(cuts: list[int]):
    """A piece that ends in what could start a marker is held until the next one shows it
    is not (so chunk boundaries may move), but not a character is lost or added."""
    text = "tool_call_start is a word, <|some_other_token|>, a lone <|tool_call_end|>, a < b."
    out = play(StreamGuard(DEFAULT_REGISTRY), stream_of(cut_anywhere(text, cuts)))
    assert out is not None
    assert content(out) == text


@given(
    st.lists(st.integers(0, 200), max_size=12),
    st.sampled_from(
        [f"Before. {CALL} After.", f"{CALL}Answer.", f"Text <|tool_calls|> more {CALL}"]
    ),
)
def test_the_client_sees_the_filtered_text_at_any_chunking(cuts: list[int], text: str):
    out = play(StreamGuard(DEFAULT_REGISTRY), stream_of(cut_anywhere(text, cuts)))
    assert out is not None
    assert content(out) == scrub(text, DEFAULT_REGISTRY)
    assert out[-1] == DONE_EVENT


def test_a_reply_of_nothing_but_markup_asks_for_the_recovery_and_sends_nothing_of_its_end():
    guard = StreamGuard(DEFAULT_REGISTRY)
    payloads = stream_of([CALL])
    out: list[bytes] = []
    for data in payloads:
        out += guard.chunk(data)
    assert guard.end(done=True) is None
    assert guard.recovering
    assert out == [sse(payloads[0])]  # the role chunk only: no finish, no [DONE]
    assert guard.stripped_chars == len(CALL)


def test_a_reply_with_a_tool_call_needs_no_recovery_whatever_it_stripped():
    tool = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "read", "arguments": "{}"},
    }
    payloads = [chunk({"content": CALL}), chunk({"tool_calls": [tool]}), chunk({}, "tool_calls")]
    out = play(StreamGuard(DEFAULT_REGISTRY), payloads)
    assert out is not None
    assert out[-2:] == [sse(payloads[2]), DONE_EVENT]
    assert sse(payloads[1]) in out  # the tool call as it came


def test_with_several_choices_there_is_no_recovery():
    assert play(StreamGuard(DEFAULT_REGISTRY, single_choice=False), stream_of([CALL])) is not None


def test_a_recovery_stream_takes_the_first_streams_identity_and_loses_its_role():
    first = StreamGuard(DEFAULT_REGISTRY)
    assert play(first, stream_of([CALL])) is None
    second = StreamGuard(DEFAULT_REGISTRY, follows=first)
    out = play(second, [chunk({"role": "assistant", "content": ""}, id="chatcmpl-2", created=9)])
    assert out is not None
    assert out[:-1] == []  # a role chunk without its role says nothing
    out = play(second, [chunk({"content": "Answer."}, id="chatcmpl-2", created=9)])
    assert out is not None
    sent = json.loads(out[0].removeprefix(b"data: "))
    assert (sent["id"], sent["created"], sent["choices"][0]["delta"]) == (
        "chatcmpl-1",
        7,
        {"content": "Answer."},
    )
    assert not second.malformed


def test_a_recovery_that_shows_nothing_is_malformed():
    first = StreamGuard(DEFAULT_REGISTRY)
    play(first, stream_of([CALL]))
    second = StreamGuard(DEFAULT_REGISTRY, follows=first)
    play(second, stream_of([CALL]))
    assert second.malformed


def test_a_partial_marker_held_at_the_finish_goes_out_with_the_finish_chunk():
    out = play(StreamGuard(DEFAULT_REGISTRY), stream_of(["It reads <|tool_call_st"]))
    assert out is not None
    assert content(out) == "It reads <|tool_call_st"


def test_reasoning_is_never_filtered():
    payloads = [chunk({"reasoning_content": CALL}), chunk({"content": "Answer."}, "stop")]
    out = play(StreamGuard(DEFAULT_REGISTRY), payloads)
    assert out == [sse(p) for p in payloads] + [DONE_EVENT]


def reasoning(out: list[bytes]) -> str:
    text: list[str] = []
    for event in out:
        data = event.removeprefix(b"data: ").strip()
        if data != b"[DONE]":
            text += [c["delta"].get("reasoning_content") or "" for c in json.loads(data)["choices"]]
    return "".join(text)


@given(st.lists(st.integers(0, 200), max_size=12))
def test_harmony_analysis_in_the_content_goes_out_as_reasoning_content_at_any_chunking(
    cuts: list[int],
):
    out = play(
        StreamGuard(registry_for("gpt-oss-20b")), stream_of(cut_anywhere(HARMONY_REPLY, cuts))
    )
    assert out is not None
    assert (content(out), reasoning(out)) == (HARMONY_ANSWER, HARMONY_REASONING)


def test_reasoning_routed_out_of_the_content_joins_the_reasoning_field_the_upstream_uses():
    guard = StreamGuard(registry_for("gpt-oss"))
    payloads = [chunk({"reasoning": "Own. ", "content": HARMONY_REPLY}, "stop")]
    out = play(guard, payloads)
    assert out is not None
    delta = json.loads(out[0].removeprefix(b"data: "))["choices"][0]["delta"]
    assert delta == {"reasoning": "Own. " + HARMONY_REASONING, "content": HARMONY_ANSWER}


def test_a_whole_completions_harmony_analysis_goes_to_its_reasoning_content():
    message = {"role": "assistant", "content": HARMONY_REPLY}
    completion = {"id": "c1", "choices": [{"index": 0, "message": message}]}
    assert CompletionGuard(registry_for("gpt-oss-120b")).filter(completion)
    assert message == {
        "role": "assistant",
        "content": HARMONY_ANSWER,
        "reasoning_content": HARMONY_REASONING,
    }


def test_a_whole_completion_is_filtered_and_recovered_like_a_stream():
    def completion(text: str, **meta: Any) -> dict[str, Any]:
        message = {"role": "assistant", "content": text, "reasoning_content": CALL}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {"id": "c1", "created": 7, "model": "m", **meta, "choices": [choice]}

    clean = CompletionGuard(DEFAULT_REGISTRY)
    assert not clean.filter(completion("Answer."))
    first = CompletionGuard(DEFAULT_REGISTRY)
    markup = completion(CALL)
    assert first.filter(markup)
    assert markup["choices"][0]["message"]["content"] == ""
    assert markup["choices"][0]["message"]["reasoning_content"] == CALL
    assert first.wants_recovery
    second = CompletionGuard(DEFAULT_REGISTRY, follows=first)
    recovered = completion("Answer.", id="c2", created=9)
    assert second.filter(recovered)
    assert (recovered["id"], recovered["created"]) == ("c1", 7)
    assert not second.malformed


def test_payloads_that_are_not_chunks_pass_as_they_came():
    payloads = ["not json", "42", json.dumps({**META, "choices": None, "usage": {"total": 3}})]
    out = play(StreamGuard(DEFAULT_REGISTRY), payloads)
    assert out == [sse(p) for p in payloads] + [DONE_EVENT]


def test_a_payload_nested_past_the_parsers_limit_passes_as_it_came():
    """Regression: json.loads raised RecursionError out of the guard, ending the stream."""
    deep = "[" * 50_000
    assert play(StreamGuard(DEFAULT_REGISTRY), [deep]) == [sse(deep), DONE_EVENT]


def test_a_changed_chunk_with_a_lone_surrogate_goes_out_with_it_escaped():
    """Regression: writing the changed chunk as UTF-8 raised UnicodeEncodeError."""
    payload = chunk({"content": "\\ud800 <|tool_calls|> ok"}).replace("\\\\", "\\")
    out = play(StreamGuard(DEFAULT_REGISTRY), [payload])
    assert out is not None
    assert json.loads(out[0][len(b"data: ") :])["choices"][0]["delta"]["content"] == "\ud800  ok"


def test_a_stream_of_markup_cut_before_its_finish_still_asks_for_the_recovery():
    guard = StreamGuard(DEFAULT_REGISTRY)
    assert guard.chunk(chunk({"content": CALL})) == []
    assert guard.end(done=False) is None


def test_a_cut_stream_gets_what_the_filter_held_and_no_done():
    guard = StreamGuard(DEFAULT_REGISTRY)
    shown = guard.chunk(chunk({"content": "It reads <|tool"}))
    rest = guard.end(done=False)
    assert rest is not None
    assert content(shown + rest) == "It reads <|tool"
    assert DONE_EVENT not in rest


def test_a_changed_chunk_that_still_carries_usage_is_sent():
    payload = json.dumps(
        {
            **META,
            "choices": [{"index": 0, "delta": {"content": CALL}, "finish_reason": None}],
            "usage": {"total": 3},
        }
    )
    [sent] = StreamGuard(DEFAULT_REGISTRY, single_choice=False).chunk(payload)
    assert json.loads(sent.removeprefix(b"data: "))["usage"] == {"total": 3}


# --- every built-in flow, as the mock sends it ---------------------------------------------------


def mock_plan(name: str, step: int, *, stream: bool) -> ResponsePlan:
    request = RequestShape(stream, False, ASKED, (), "openai")
    return plan_response(FLOWS[name].steps[step], MOCK_META, "reasoning_content", request)


def mock_stream(name: str, step: int = 0) -> list[str]:
    """The `data:` payloads (but `[DONE]`) of the flow's step as the mock streams it."""
    return [e for e in sent_events(mock_plan(name, step, stream=True)) if e != "[DONE]"]


def mock_completion(name: str, step: int = 0) -> dict[str, Any]:
    """The flow's step as the mock answers it whole."""
    return sent_body(mock_plan(name, step, stream=False))


@pytest.mark.parametrize("name", ANSWERED)
def test_each_built_in_flow_as_the_mock_sends_it_shows_what_its_expect_block_says(name: str):
    """Streamed (StreamGuard) and whole (CompletionGuard), with the recovery's step where
    one is due, under `auto`'s registry for the model the mock names: the text the client
    is left with, the recovery, the malformed-reply verdict, the stripped count."""
    flow = FLOWS[name]
    step = flow.steps[0]
    registry = registry_for(MOCK_META.model)
    expect = flow.expect_for(MOCK_META.model)
    one_turn = expect is not None and not step.tool_calls  # a tool round ends a turn later
    streamed = StreamGuard(registry)
    out = play(streamed, mock_stream(name))
    whole = CompletionGuard(registry)
    answer = mock_completion(name)
    whole.filter(answer)
    recovers = expect is not None and expect.recovery
    assert (out is None, whole.wants_recovery) == (recovers, recovers)
    stripped = (streamed.stripped_chars, whole.stripped_chars)
    if expect is not None and expect.recovery:
        streamed = StreamGuard(registry, follows=streamed)
        out = play(streamed, mock_stream(name, 1))
        whole = CompletionGuard(registry, follows=whole)
        answer = mock_completion(name, 1)
        whole.filter(answer)
        stripped = (stripped[0] + streamed.stripped_chars, stripped[1] + whole.stripped_chars)
    assert out is not None
    assert out[-1] == DONE_EVENT
    malformed = expect is not None and expect.error == "malformed"
    assert (streamed.malformed, whole.malformed) == (malformed, malformed)
    shown = expect.shown if one_turn and expect is not None else scrub(step.content, registry)
    texts = [content(out), answer["choices"][0]["message"]["content"] or ""]
    assert texts == ["" if malformed else shown] * 2
    if one_turn and expect is not None:
        assert stripped == (expect.stripped_chars, expect.stripped_chars)
    if canary := hidden_canary(flow, MOCK_META.model):
        assert not any(canary in text for text in texts)
