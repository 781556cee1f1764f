"""The Open WebUI filter function: `stream` per event, `outlet` on the saved chat, valves.

Every test runs twice: on the template module (which imports the guardrail library) and on
the generated pasteable file loaded as Open WebUI loads a function. The oracle is the
library itself (`guardrail.policy.scrub`, the flows' own expect blocks), never the filter.
Pure: no sockets, no Open WebUI (tests/thirdparty runs the file inside the real one).
"""

from __future__ import annotations

import copy
import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrail.model_profiles import registry_for
from guardrail.policy import MALFORMED_REPLY, scrub
from guardrail.registries import DEFAULT_REGISTRY, OPT_IN, PROFILES, registry_with
from mock_llm import builtin_flows

from ...support.cases import check_each
from ...support.families import EVERY_FAMILY, hidden_canary
from ..conftest import plan, sent_chunks
from ..helpers.openwebui_driver import (
    IMPLEMENTATIONS,
    chunk,
    outlet_body,
    output_text,
    play,
    saved_message,
    shown,
    stream_of,
    webui_model,
    without_content,
)
from ..helpers.scaffolding import cut_at

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
CALL = f"{START}[read(path='/homelab/sgcanary-owui/x.md')]{END}"
FLOWS = builtin_flows()
EXPECTING = sorted(name for name, flow in FLOWS.items() if flow.expect is not None)
PARTS = [START, END, "<|tool_calls|>", "<|tool_call|>", "<|tool_", "<|", "<", "x", " ", "\n"]
HERMES = '<tool_call>{"name": "read", "arguments": {}}</tool_call>'
QWEN_LEAK = f"Backups run nightly.{HERMES} Verified weekly."
markupish = st.lists(st.sampled_from(PARTS) | st.text(max_size=4), max_size=24).map("".join)


@pytest.fixture(scope="module", params=sorted(IMPLEMENTATIONS))
def impl(request: pytest.FixtureRequest) -> types.ModuleType:
    return IMPLEMENTATIONS[request.param]()


def what_the_user_sees(text: str) -> str:
    """The library's verdict on a whole reply: its clean text, or the malformed copy where
    something was stripped and nothing but whitespace is left (needs_recovery)."""
    clean = scrub(text, DEFAULT_REGISTRY)
    return MALFORMED_REPLY if clean != text and clean.strip() == "" else clean


def assert_streamed(streamed: str, text: str) -> None:
    """A stream shows the whole reply's verdict; the copy may follow whitespace the stream
    had already let through before it knew that nothing else would come."""
    expected = what_the_user_sees(text)
    if expected == MALFORMED_REPLY:
        assert streamed.endswith(MALFORMED_REPLY)
        assert streamed.removesuffix(MALFORMED_REPLY).strip() == ""
    else:
        assert streamed == expected


def cuts_of(text: str) -> st.SearchStrategy[list[str]]:
    return st.lists(st.integers(0, len(text)), max_size=10).map(lambda c: cut_at(text, *c))


# --- the built-in flows ------------------------------------------------------------------


def test_the_flows_with_an_expect_block_are_all_played():
    assert {"scaffold-recover", "scaffold-repeat", "tool-with-scaffold", "clean"} <= set(EXPECTING)


def test_each_flow_shows_its_expected_text_or_the_malformed_copy(impl):
    """A filter cannot send the recovery request: where the expect block says one is due,
    the user reads the malformed-reply copy; otherwise exactly the text it states (for a
    family flow, the one for the model's family: `auto` is the default), every round of the
    turn (a tool round, then its answer) in the same message. Each flow under a model of
    LFM2 and one that names every family; a failure names both."""

    def shows_it(case: tuple[str, str]) -> None:
        name, model = case
        flow = FLOWS[name]
        expect = flow.expect_for(model)
        assert expect is not None
        rounds = 1 if expect.recovery else expect.requests
        filter_ = impl.Filter()
        events: list[dict[str, Any]] = []
        for number in range(rounds):
            sent = sent_chunks(plan(flow.step_for(number), include_usage=True))
            events += play(filter_, sent, model=webui_model(model))
        expected = MALFORMED_REPLY if expect.recovery else expect.shown
        assert shown(events) == expected
        if canary := hidden_canary(flow, model):
            assert canary not in repr(without_content(events)) + shown(events)

    models = {"lfm2": "lfm2-owui", "every-family": EVERY_FAMILY}
    cases = [(f"{name} ({m})", (name, model)) for name in EXPECTING for m, model in models.items()]
    assert check_each(cases, shows_it) == 2 * len(EXPECTING)


ROUTES_REASONING = {"harmony-messages"}
"""Flows whose content carries gpt-oss's analysis channel, which joins the reasoning."""


def test_each_flow_keeps_every_field_but_the_content_as_the_mock_sent_it(impl):
    """Reasoning (G9), tool calls (G12), roles, finishes and usage pass untouched."""

    def untouched(name: str) -> None:
        events = sent_chunks(plan(FLOWS[name].steps[0], include_usage=True))
        kept = without_content(play(impl.Filter(), copy.deepcopy(events)))
        assert kept == without_content(events)

    kept_whole = [name for name in EXPECTING if name not in ROUTES_REASONING]
    assert check_each(((name, name) for name in kept_whole), untouched) == len(kept_whole)


def test_harmony_analysis_in_the_content_reaches_the_page_as_reasoning(impl):
    events = play(impl.Filter(), sent_chunks(plan(FLOWS["harmony-messages"].steps[0])))
    reasoning = "".join(e["choices"][0]["delta"].get("reasoning_content", "") for e in events)
    content = "".join(e["choices"][0]["delta"].get("content") or "" for e in events)
    assert reasoning == "The user asks when backups run. The notes say it; answer, then read them."
    assert content == "Backups run nightly at 02:00 with restic to the NAS."


def test_thinking_with_markup_reaches_the_page_raw(impl):
    step = FLOWS["thinking-scaffold"].steps[0]
    events = play(impl.Filter(), sent_chunks(plan(step)))
    reasoning = "".join(e["choices"][0]["delta"].get("reasoning_content", "") for e in events)
    assert reasoning == step.reasoning
    assert START in reasoning


# --- chunkings and interleavings ------------------------------------------------------


@given(st.data())
def test_any_chunking_shows_what_the_library_shows_for_the_whole_reply(impl, data: st.DataObject):
    text = data.draw(markupish)
    pieces = data.draw(cuts_of(text))
    assert_streamed(shown(play(impl.Filter(), stream_of(pieces))), text)


@given(st.data())
def test_two_interleaved_messages_are_filtered_apart(impl, data: st.DataObject):
    """Open WebUI streams several messages at once through the one filter instance (two
    chats, or two models answering in one chat): each keeps its own held text and spans."""
    texts = [data.draw(markupish), data.draw(markupish)]
    queues = [stream_of(data.draw(cuts_of(text))) for text in texts]
    order = data.draw(st.permutations([0] * len(queues[0]) + [1] * len(queues[1])))
    filter_ = impl.Filter()
    out: list[list[dict[str, Any]]] = [[], []]
    for which in order:
        event = queues[which].pop(0)
        out[which] += play(filter_, [event], message_id=f"msg-{which}")
    for events, text in zip(out, texts, strict=True):
        assert_streamed(shown(events), text)


def test_a_marker_split_between_two_messages_chunks_is_still_caught(impl):
    filter_ = impl.Filter()
    first = play(filter_, [chunk("Before <|tool_ca")], message_id="a")
    play(filter_, [chunk("Other message.")], message_id="b")
    rest = play(filter_, [chunk("ll_start|>x" + END + " after"), chunk(finish="stop")], "a")
    assert shown(first + rest) == "Before  after"


def test_two_choices_of_one_reply_are_filtered_apart(impl):
    filter_ = impl.Filter()
    events = [
        chunk("Zero <|tool_call", index=0),
        chunk(f"One {CALL}", index=1),
        chunk("_start|>hidden", index=0, finish="stop"),
        chunk(" end", index=1, finish="stop"),
    ]
    out = play(filter_, events)
    assert (shown(out, 0), shown(out, 1)) == ("Zero ", "One  end")


def test_without_a_message_id_replies_are_told_apart_by_their_completion_id(impl):
    """An API client's stream has no Open WebUI message: the completion id names it."""
    filter_ = impl.Filter()
    a = play(filter_, [chunk("A <|tool_call_s", completion="c-a")], message_id=None)
    b = play(filter_, [chunk("B <|tool_call_s", completion="c-b")], message_id=None)
    a += play(
        filter_, [chunk("tart|>x", completion="c-a"), chunk(finish="stop", completion="c-a")], None
    )
    b += play(
        filter_, [chunk("ome", completion="c-b"), chunk(finish="stop", completion="c-b")], None
    )
    assert (shown(a), shown(b)) == ("A ", "B <|tool_call_some")


def test_a_new_reply_of_the_same_message_starts_clean_after_a_finish(impl):
    """A tool round ends with its finish chunk; the answer round of the same message must
    not inherit its filter (an unterminated span would eat the answer)."""
    filter_ = impl.Filter()
    tool_round = [
        chunk(f"{START}[read(path='/x')]"),
        chunk(tool_calls=[{"index": 0, "id": "c1", "function": {"name": "read"}}]),
        chunk(finish="tool_calls"),
    ]
    assert shown(play(filter_, tool_round)) == ""
    assert shown(play(filter_, stream_of(["The answer."]))) == "The answer."


# --- the end of a reply -------------------------------------------------------------------


def test_a_partial_marker_at_the_end_goes_out_on_the_finish_chunk(impl):
    out = play(impl.Filter(), stream_of(["The log reads ", "<|tool_call_st"]))
    assert [shown([e]) for e in out] == ["", "The log reads ", "", "<|tool_call_st"]


def test_a_finish_chunk_with_content_shows_it_and_the_held_tail(impl):
    out = play(impl.Filter(), [chunk("Hi <|tool"), chunk("_call", finish="stop")])
    assert shown(out) == "Hi <|tool_call"


def test_a_reply_of_nothing_but_markup_ends_with_the_malformed_copy(impl):
    out = play(impl.Filter(), stream_of([CALL[:10], CALL[10:], "\n"]))
    assert [shown([e]) for e in out] == ["", "", "", "\n", MALFORMED_REPLY]


def test_a_finish_chunk_with_no_delta_still_gets_the_copy(impl):
    filter_ = impl.Filter()
    play(filter_, [chunk(CALL)])
    finish = {"id": "chatcmpl-1", "choices": [{"index": 0, "finish_reason": "stop"}]}
    assert play(filter_, [finish])[0]["choices"][0]["delta"] == {"content": MALFORMED_REPLY}


def test_a_round_with_a_tool_call_gets_no_copy_whatever_it_stripped(impl):
    """G12, even from a server that finishes a tool round with `stop`."""
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "read"}}
    out = play(impl.Filter(), [chunk(CALL), chunk(tool_calls=[call]), chunk(finish="stop")])
    assert shown(out) == ""
    assert out[1]["choices"][0]["delta"]["tool_calls"] == [call]


def test_a_finish_reason_of_tool_calls_alone_counts_as_a_tool_call(impl):
    assert shown(play(impl.Filter(), [chunk(CALL), chunk(finish="tool_calls")])) == ""


def test_an_empty_or_thinking_only_reply_is_not_a_malformed_one(impl):
    """Only stripped markup makes a reply malformed; nothing at all stays nothing."""
    assert shown(play(impl.Filter(), stream_of([]))) == ""
    thinking = [chunk(reasoning_content=f"think {CALL}"), chunk(finish="stop")]
    assert shown(play(impl.Filter(), thinking)) == ""


def test_a_clean_stream_is_passed_as_it_came(impl):
    events = stream_of(["Backups run ", "nightly at 02:00", " < 03:00."])
    assert play(impl.Filter(), copy.deepcopy(events)) == events


# --- memory -----------------------------------------------------------------------------


def test_abandoned_replies_are_forgotten_past_the_bound(impl):
    """A stopped stream never sends its finish chunk: the oldest open reply goes first."""
    filter_ = impl.Filter()
    bound = impl.MAX_OPEN_REPLIES
    for number in range(bound + 50):
        play(filter_, [chunk("held <|tool_call_st")], message_id=f"m{number}")
    assert len(filter_._open) == bound
    assert shown(play(filter_, [chunk(finish="stop")], message_id="m0")) == ""
    last = f"m{bound + 49}"
    assert shown(play(filter_, [chunk(finish="stop")], message_id=last)) == "<|tool_call_st"


def test_a_finished_reply_leaves_nothing_open(impl):
    filter_ = impl.Filter()
    play(filter_, stream_of([f"a {CALL} b"]))
    assert len(filter_._open) == 0


# --- hostile events -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        None,
        "data: [DONE]",
        42,
        ["choices"],
        {},
        {"choices": None},
        {"choices": "x"},
        {"choices": [None, 3, "x", []]},
        {"choices": [{"index": 0, "delta": "content"}]},
        {"choices": [{"index": 0, "delta": None, "finish_reason": None}]},
        {"choices": [], "usage": {"prompt_tokens": 3}},
        {"error": {"message": "upstream failed"}},
        {"type": "response.output_text.delta", "delta": "x"},
    ],
    ids=repr,
)
def test_an_event_of_another_shape_comes_back_as_it_came(impl, event: object):
    before = copy.deepcopy(event)
    assert play(impl.Filter(), [event])[0] == before  # type: ignore[list-item]


@pytest.mark.parametrize("index", ["0", None, [0], 1.5, True])
def test_a_choice_index_of_any_type_still_filters(impl, index: object):
    event = chunk(CALL + "ok")
    event["choices"][0]["index"] = index
    assert play(impl.Filter(), [event])[0]["choices"][0]["delta"]["content"] == "ok"


@pytest.mark.parametrize(
    ("content", "expected"),
    [(12, "12"), ([f"a{CALL}b"], '["ab"]'), ({"k": 1}, "{'k': 1}"), (0, 0), ([], [])],
    ids=["int", "list", "dict", "zero", "empty list"],
)
def test_non_text_content_is_filtered_as_the_text_open_webui_makes_of_it(
    impl, content: object, expected: object
):
    """Open WebUI shows `f'{value}'` of a truthy non-text content and skips a falsy one."""
    out = play(impl.Filter(), [chunk(content)])[0]["choices"][0]["delta"]["content"]
    assert out == expected


def test_a_huge_event_is_filtered_whole(impl):
    text = ("word " * 50_000 + CALL) * 4 + "<|tool_call"
    out = play(impl.Filter(), [chunk(text), chunk(finish="stop")])
    assert shown(out) == scrub(text, DEFAULT_REGISTRY)


def test_a_deeply_nested_field_is_left_alone(impl):
    nested: object = "x"
    for _ in range(5000):
        nested = {"n": nested}
    event = chunk("ok", extra=nested)
    assert play(impl.Filter(), [event])[0]["choices"][0]["delta"]["extra"] is nested


# --- valves -------------------------------------------------------------------------------


def test_switched_off_the_filter_passes_everything(impl):
    filter_ = impl.Filter()
    filter_.valves = filter_.Valves(enabled=False)
    events = stream_of([CALL])
    assert play(filter_, copy.deepcopy(events)) == events
    body = outlet_body(saved_message(CALL))
    assert filter_.outlet(copy.deepcopy(body)) == body


def test_the_profiles_valve_is_auto_by_default(impl):
    assert impl.Filter().valves.profiles == "auto"


def test_a_qwen_models_tool_call_is_stripped_under_the_default(impl):
    events = stream_of([QWEN_LEAK], model="qwen3:8b")
    assert shown(play(impl.Filter(), events)) == "Backups run nightly. Verified weekly."


@pytest.mark.parametrize("model", ["lfm2-1.2b", "my-local-model"])
def test_the_same_tool_call_stays_text_for_an_lfm2_or_unknown_model(impl, model: str):
    events = stream_of([QWEN_LEAK], model=model)
    assert shown(play(impl.Filter(), events, model=webui_model(model))) == QWEN_LEAK


@pytest.mark.parametrize(
    "model",
    [webui_model("qwen3:8b"), webui_model("my-helper", base_model_id="qwen3:8b")],
    ids=["id", "base-model-id"],
)
def test_open_webuis_model_names_the_family_when_the_chunk_does_not(impl, model: dict[str, Any]):
    events = stream_of([QWEN_LEAK], model="my-alias")
    assert shown(play(impl.Filter(), events, model=model)) == scrub(QWEN_LEAK, registry_for("qwen"))


def test_a_replys_registry_is_chosen_when_it_starts(impl):
    """A later chunk naming another model does not change the filter of an open reply."""
    events = stream_of(["Backups run nightly.<tool_", 'call>{"name": "read"}</tool_call> ok'])
    events[0]["model"] = "qwen3:8b"
    assert shown(play(impl.Filter(), events)) == "Backups run nightly. ok"


def test_a_profile_valve_of_none_keeps_the_tool_call_even_for_qwen(impl):
    filter_ = impl.Filter()
    filter_.valves = filter_.Valves(profiles="none")
    assert shown(play(filter_, stream_of([QWEN_LEAK], model="qwen3:8b"))) == QWEN_LEAK


def test_a_profile_valve_strips_the_listed_families_markup_whatever_the_model(impl):
    filter_ = impl.Filter()
    text = "Hermes <tool_call>{}</tool_call>done [TOOL_CALLS] rest"
    filter_.valves = filter_.Valves(profiles="hermes, Mistral")
    assert shown(play(filter_, stream_of([text]))) == scrub(
        text, registry_with("hermes", "mistral")
    )


def test_a_profile_valve_of_all_strips_every_family_but_the_opt_in_ones(impl):
    filter_ = impl.Filter()
    filter_.valves = filter_.Valves(profiles="all")
    every = registry_with(*(p for p in PROFILES if p not in OPT_IN))
    text = f"{QWEN_LEAK} [TOOL_CALLS] [Calling tool: read()]"
    assert shown(play(filter_, stream_of([text]))) == scrub(text, every)


@pytest.mark.parametrize("value", ["hermes nope", "auto,hermes"])
def test_an_unknown_profile_is_refused_when_the_valves_are_saved(impl, value: str):
    with pytest.raises(ValueError, match=r"unknown profile.*known: auto, none, all, "):
        impl.Filter.Valves(profiles=value)


def test_the_valve_is_read_comma_or_space_separated_in_any_case(impl):
    assert impl.profile_choice(" hermes,mistral  HERMES ,, kimi").names == (
        "hermes",
        "mistral",
        "kimi",
    )


def test_an_unknown_profile_in_a_stored_valve_is_skipped_not_raised(impl):
    assert impl.profile_choice("hermes bogus").names == ("hermes",)
    assert impl.profile_choice("auto,hermes").names == ("hermes",)


# --- outlet -------------------------------------------------------------------------------


def test_outlet_repairs_the_content_and_the_output_items(impl):
    text = f"Let me check. {CALL}Backups run nightly."
    message = saved_message(text)
    message["output"].insert(
        0,
        {"type": "reasoning", "content": [{"type": "output_text", "text": f"I could {CALL}"}]},
    )
    body = impl.Filter().outlet(outlet_body(message))
    repaired = body["messages"][1]
    assert repaired["content"] == "Let me check. Backups run nightly."
    assert output_text(repaired) == "Let me check. Backups run nightly."
    assert repaired["output"][0]["content"][0]["text"] == f"I could {CALL}"  # G9


@pytest.mark.parametrize(
    ("model", "expected"),
    [("qwen3:8b", "Backups run nightly. Verified weekly."), ("lfm2-1.2b", QWEN_LEAK)],
)
def test_outlet_repairs_by_the_chats_model(impl, model: str, expected: str):
    body = impl.Filter().outlet(outlet_body(saved_message(QWEN_LEAK), model=model))
    repaired = body["messages"][1]
    assert (repaired["content"], output_text(repaired)) == (expected, expected)


def test_outlet_repairs_by_open_webuis_model_of_the_chat(impl):
    body = outlet_body(saved_message(QWEN_LEAK), model="my-helper")
    model = webui_model("my-helper", base_model_id="qwen3:8b")
    repaired = impl.Filter().outlet(body, __model__=model)["messages"][1]
    assert repaired["content"] == "Backups run nightly. Verified weekly."


def test_outlet_shows_the_copy_where_a_saved_reply_was_all_markup(impl):
    body = impl.Filter().outlet(outlet_body(saved_message(CALL + "\n")))
    repaired = body["messages"][1]
    assert (repaired["content"], output_text(repaired)) == (MALFORMED_REPLY, MALFORMED_REPLY)


def test_outlet_leaves_a_tool_calling_reply_without_the_copy(impl):
    message = saved_message(CALL)
    message["output"].append({"type": "function_call", "name": "read", "arguments": CALL})
    body = impl.Filter().outlet(outlet_body(message))
    repaired = body["messages"][1]
    assert (repaired["content"], output_text(repaired)) == ("", "")
    assert repaired["output"][1]["arguments"] == CALL  # G12: the call's business


def test_outlet_leaves_user_messages_and_clean_chats_alone(impl):
    body = outlet_body(saved_message("Backups run nightly < 03:00."))
    body["messages"][0]["content"] = f"Why does it print {CALL}?"
    assert impl.Filter().outlet(copy.deepcopy(body)) == body


def test_outlet_after_the_stream_filter_changes_nothing(impl):
    """What the stream showed is what is saved: the outlet's repair is idempotent on it."""
    filter_ = impl.Filter()
    for text in (f"a {CALL} b <|tool_call", CALL):
        content = shown(play(filter_, stream_of([text[:7], text[7:]])))
        body = outlet_body(saved_message(content))
        assert filter_.outlet(copy.deepcopy(body)) == body


def test_outlet_finishes_a_stream_that_ended_without_a_finish_chunk(impl):
    """A stream cut after its last content chunk: the outlet appends the held tail."""
    filter_ = impl.Filter()
    content = shown(play(filter_, [chunk("The log reads <|tool_call_st")]))
    body = filter_.outlet(outlet_body(saved_message(content)))
    repaired = body["messages"][1]
    assert (repaired["content"], output_text(repaired)) == ("The log reads <|tool_call_st",) * 2
    assert len(filter_._open) == 0


def test_outlet_gives_an_unfinished_all_markup_stream_the_copy(impl):
    """Nothing of it was shown, so Open WebUI saved no message item at all."""
    filter_ = impl.Filter()
    play(filter_, [chunk(CALL)])
    message = {"id": "msg-1", "role": "assistant", "content": "", "output": []}
    repaired = filter_.outlet(outlet_body(message))["messages"][1]
    assert (repaired["content"], output_text(repaired)) == (MALFORMED_REPLY, MALFORMED_REPLY)


def test_outlet_appends_a_held_tail_as_an_output_item_when_there_is_none(impl):
    filter_ = impl.Filter()
    play(filter_, [chunk("<|tool_call_st")])
    message = {"id": "msg-1", "role": "assistant", "content": "", "output": []}
    repaired = filter_.outlet(outlet_body(message))["messages"][1]
    assert (repaired["content"], output_text(repaired)) == ("<|tool_call_st",) * 2


def test_outlet_finishes_only_the_message_it_is_called_for(impl):
    filter_ = impl.Filter()
    play(filter_, [chunk("other <|tool_call_st")], message_id="msg-2")
    filter_.outlet(outlet_body(saved_message("done")))
    assert shown(play(filter_, [chunk(finish="stop")], message_id="msg-2")) == "<|tool_call_st"


@pytest.mark.parametrize(
    "body",
    [
        None,
        "x",
        [],
        {},
        {"messages": None},
        {"messages": "x", "id": "msg-1"},
        {"messages": [None, 1, "x", {"role": "assistant"}], "id": 5},
        {"messages": [{"role": "assistant", "content": ["part"], "output": "x"}]},
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": None,
                    "output": [None, {"type": "message", "content": [1, {"text": 2}]}],
                }
            ]
        },
    ],
    ids=repr,
)
def test_outlet_returns_a_body_of_another_shape_as_it_came(impl, body: object):
    assert impl.Filter().outlet(copy.deepcopy(body)) == body


@given(markupish)
def test_outlet_agrees_with_the_stream_on_any_reply(impl, text: str):
    repaired = impl.Filter().outlet(outlet_body(saved_message(text)))["messages"][1]
    assert repaired["content"] == output_text(repaired) == what_the_user_sees(text)


def test_outlet_repairs_a_message_saved_without_output_items(impl):
    message = {"id": "msg-1", "role": "assistant", "content": f"Hi {CALL}"}
    repaired = impl.Filter().outlet(outlet_body(message))["messages"][1]
    assert repaired == {"id": "msg-1", "role": "assistant", "content": "Hi "}
    message = {"id": "msg-1", "role": "assistant", "content": CALL}
    repaired = impl.Filter().outlet(outlet_body(message))["messages"][1]
    assert repaired == {"id": "msg-1", "role": "assistant", "content": MALFORMED_REPLY}


def test_outlet_gives_an_all_markup_content_an_output_item_with_the_copy(impl):
    message = {"id": "msg-1", "role": "assistant", "content": CALL, "output": []}
    repaired = impl.Filter().outlet(outlet_body(message))["messages"][1]
    assert (repaired["content"], output_text(repaired)) == (MALFORMED_REPLY, MALFORMED_REPLY)


def test_outlet_counts_a_messages_own_tool_calls_list(impl):
    message = {"id": "m", "role": "assistant", "content": CALL, "tool_calls": [{"id": "c"}]}
    repaired = impl.Filter().outlet(outlet_body(message, message_id="m"))["messages"][1]
    assert repaired["content"] == ""


def test_outlet_appends_a_held_tail_to_content_alone_when_there_is_no_output(impl):
    filter_ = impl.Filter()
    play(filter_, [chunk("Tail <|tool_call")])
    message = {"id": "msg-1", "role": "assistant", "content": "Tail "}
    repaired = filter_.outlet(outlet_body(message))["messages"][1]
    assert repaired == {"id": "msg-1", "role": "assistant", "content": "Tail <|tool_call"}


def test_outlet_appends_a_held_tail_to_output_alone_when_content_is_parts(impl):
    filter_ = impl.Filter()
    play(filter_, [chunk("Tail <|tool_call")])
    message = saved_message("Tail ")
    message["content"] = [{"type": "text", "text": "Tail "}]
    repaired = filter_.outlet(outlet_body(message))["messages"][1]
    assert repaired["content"] == [{"type": "text", "text": "Tail "}]
    assert output_text(repaired) == "Tail <|tool_call"


def test_outlet_skips_output_items_whose_content_is_not_a_list(impl):
    message = saved_message(f"A {CALL}")
    message["output"].append({"type": "message", "content": f"raw {CALL}"})
    repaired = impl.Filter().outlet(outlet_body(message))["messages"][1]
    assert (repaired["content"], repaired["output"][1]["content"]) == ("A ", f"raw {CALL}")
