"""guard.wire.responses_stream, guard.wire.responses_whole and guard.wire.responses_api: the OpenAI
Responses API through the guardrail, event by event and whole. Pure.

Streams are built in the shape the API (and the mock) sends them; every event the guard
sends is validated against the official SDK's own model (`ResponseStreamEvent`), and its
sequence numbers are checked to run 0, 1, 2, ... without a gap."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent

from guard.wire.responses_api import event_bytes, raw_event, recovery_body
from guard.wire.responses_stream import ResponsesStreamGuard
from guard.wire.responses_whole import ResponseGuard
from guardrail.model_profiles import registry_for
from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY, scrub
from guardrail.registries import DEFAULT_REGISTRY
from mock_llm import builtin_flows
from mock_llm.wire import openai as openai_wire
from mock_llm.wire.responses import response as mock_response
from mock_llm.wire.responses import stream_events
from servekit.sse import SseDecoder, SseEvent

from ..helpers.scaffolding import (
    HARMONY_ANSWER,
    HARMONY_REASONING,
    HARMONY_REPLY,
    cut_at,
    routed_reasoning,
    untouchable,
)

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
CALL = f"{START}[read(path='/homelab/x.md')]{END}"
CLEAN = "Backups run nightly at 02:00 with restic to the NAS."
LOOKALIKE = "tool_call_start is a word, <|some_other_token|>, a lone <|tool_call_end|>, a < b."
EVENTS = pydantic.TypeAdapter[ResponseStreamEvent](ResponseStreamEvent)
FLOWS = builtin_flows()
META = openai_wire.CompletionMeta(id="chatcmpl-mock7", created=1_700_000_000, model="m")
RECOVERY_META = openai_wire.CompletionMeta(id="chatcmpl-mock8", created=1_700_000_009, model="m")
ASKED: list[dict[str, Any]] = [{"role": "user", "content": "When do backups run?"}]
ANSWERED = sorted(n for n, f in FLOWS.items() if f.steps[0].fault is None and n != "slow")
"""The built-in flows whose first step answers (`slow`'s whole stream is long to build)."""


# --- streams as the API sends them ------------------------------------------------------------


def opening(rid: str) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": 7 if rid == "resp_1" else 9,
        "status": "in_progress",
        "model": "m",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def build(
    pieces: list[str],
    *,
    reasoning: str | None = None,
    arguments: str | None = None,
    rid: str = "resp_1",
    ending: str = "response.completed",
) -> list[dict[str, Any]]:
    """A stream's events: a reasoning item, a message streamed in `pieces`, a function call,
    then `ending`, numbered from 0."""
    events: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    tag = rid.removeprefix("resp_")

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, **fields})

    add("response.created", response=opening(rid))
    add("response.in_progress", response=opening(rid))
    if reasoning is not None:
        where = {"item_id": f"rs_{tag}_0", "output_index": 0, "content_index": 0}
        part = {"type": "reasoning_text", "text": reasoning}
        item = {"id": f"rs_{tag}_0", "type": "reasoning", "summary": [], "content": [part]}
        add("response.output_item.added", output_index=0, item={**item, "content": []})
        add("response.content_part.added", **where, part={**part, "text": ""})
        add("response.reasoning_text.delta", **where, delta=reasoning)
        add("response.reasoning_text.done", **where, text=reasoning)
        add("response.content_part.done", **where, part=part)
        add("response.output_item.done", output_index=0, item=item)
        output.append(item)
    index = len(output)
    text = "".join(pieces)
    where = {"item_id": f"msg_{tag}_{index}", "output_index": index, "content_index": 0}
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    message = {
        "id": f"msg_{tag}_{index}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }
    add("response.output_item.added", output_index=index, item={**message, "content": []})
    add("response.content_part.added", **where, part={**part, "text": ""})
    for piece in pieces:
        add("response.output_text.delta", **where, delta=piece, logprobs=[])
    add("response.output_text.done", **where, text=text, logprobs=[])
    add("response.content_part.done", **where, part=part)
    add("response.output_item.done", output_index=index, item=message)
    output.append(message)
    if arguments is not None:
        index = len(output)
        call = {
            "id": f"fc_{tag}_{index}",
            "type": "function_call",
            "call_id": f"call_{tag}",
            "name": "read",
            "arguments": arguments,
            "status": "completed",
        }
        where = {"item_id": call["id"], "output_index": index}
        add("response.output_item.added", output_index=index, item={**call, "arguments": ""})
        add("response.function_call_arguments.delta", **where, delta=arguments)
        add("response.function_call_arguments.done", **where, arguments=arguments)
        add("response.output_item.done", output_index=index, item=call)
        output.append(call)
    status = "completed" if ending == "response.completed" else "incomplete"
    add(ending, response={**opening(rid), "status": status, "output": output})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def wire_bytes(events: list[dict[str, Any]]) -> bytes:
    return b"".join(event_bytes(e) for e in events)


def decode(raw: bytes) -> list[SseEvent]:
    decoder = SseDecoder()
    return decoder.feed(raw) + decoder.finish()


def run(guard: ResponsesStreamGuard, raw: bytes) -> tuple[list[bytes], list[bytes] | None]:
    """What the client gets for each event of a whole upstream stream, and for its end (None:
    the reply gets the recovery)."""
    out: list[bytes] = []
    for event in decode(raw):
        out += guard.event(event)
    return out, guard.end()


def played(guard: ResponsesStreamGuard, raw: bytes) -> list[bytes]:
    out, rest = run(guard, raw)
    assert rest is not None
    return out + rest


def recovered(guard: ResponsesStreamGuard, raw: bytes) -> list[bytes]:
    """What the client got of a reply that gets the recovery."""
    out, rest = run(guard, raw)
    assert rest is None
    assert guard.recovering
    return out


def parsed(out: list[bytes]) -> list[dict[str, Any]]:
    """The client's events, each validated against the SDK's model."""
    events = [json.loads(e.data) for e in decode(b"".join(out))]
    for event in events:
        EVENTS.validate_python(event)
    return events


def text_of(events: list[dict[str, Any]], kind: str = "response.output_text.delta") -> str:
    return "".join(e["delta"] for e in events if e["type"] == kind)


def numbers(events: list[dict[str, Any]]) -> list[int]:
    return [e["sequence_number"] for e in events]


def final_texts(events: list[dict[str, Any]]) -> list[str]:
    """Every final answer text the client got: output_text.done, content_part.done,
    output_item.done, the completion's output."""
    texts: list[str] = []
    for event in events:
        kind = event["type"]
        if kind == "response.output_text.done":
            texts.append(event["text"])
        elif kind == "response.content_part.done" and event["part"]["type"] == "output_text":
            texts.append(event["part"]["text"])
        elif kind == "response.output_item.done" and event["item"]["type"] == "message":
            texts.append("".join(p["text"] for p in event["item"]["content"]))
        elif kind in ("response.completed", "response.incomplete"):
            texts.append(Response.model_validate(event["response"]).output_text)
    return texts


def split(text: str, cuts: list[int]) -> list[str]:
    return [p for p in cut_at(text, *(c % (len(text) + 1) for c in cuts)) if p] or [""]


def mock_stream(step_flow: str, step: int = 0, meta: openai_wire.CompletionMeta = META) -> bytes:
    frames = stream_events(FLOWS[step_flow].steps[step], meta, ASKED)
    return b"".join(data for _, data in frames)


# --- chunkings --------------------------------------------------------------------------------


@given(st.lists(st.integers(0, 200), max_size=12))
def test_a_clean_stream_goes_out_as_the_upstreams_own_bytes_at_any_chunking(cuts: list[int]):
    raw = wire_bytes(build(split(CLEAN, cuts), reasoning=f"I think {CALL}"))
    assert b"".join(played(ResponsesStreamGuard(DEFAULT_REGISTRY), raw)) == raw


@given(
    st.lists(st.integers(0, 200), max_size=12),
    st.sampled_from(
        [f"Before. {CALL} After.", f"{CALL}Answer.", f"Text <|tool_calls|> more {CALL}", LOOKALIKE]
    ),
)
def test_markup_is_filtered_the_same_at_any_chunking_and_the_final_texts_agree(
    cuts: list[int], text: str
):
    events = parsed(
        played(ResponsesStreamGuard(DEFAULT_REGISTRY), wire_bytes(build(split(text, cuts))))
    )
    shown = text_of(events)
    assert shown == scrub(text, DEFAULT_REGISTRY)
    assert final_texts(events) == [shown] * 4
    assert numbers(events) == list(range(len(events)))
    assert events[-1]["type"] == "response.completed"


@given(st.lists(st.integers(0, 200), max_size=12))
def test_a_partial_marker_at_the_end_goes_out_before_the_text_is_done(cuts: list[int]):
    text = "The log reads <|tool_call_st"
    events = parsed(
        played(ResponsesStreamGuard(DEFAULT_REGISTRY), wire_bytes(build(split(text, cuts))))
    )
    kinds = [e["type"] for e in events]
    assert text_of(events) == text
    last_delta = max(i for i, k in enumerate(kinds) if k == "response.output_text.delta")
    assert kinds[last_delta + 1] == "response.output_text.done"
    assert final_texts(events) == [text] * 4
    assert numbers(events) == list(range(len(events)))


# --- what is left alone -----------------------------------------------------------------------


def test_reasoning_with_markup_is_never_filtered():
    raw = wire_bytes(build([CLEAN], reasoning=CALL))
    events = parsed(played(ResponsesStreamGuard(DEFAULT_REGISTRY), raw))
    assert text_of(events, "response.reasoning_text.delta") == CALL
    assert b"".join(played(ResponsesStreamGuard(DEFAULT_REGISTRY), raw)) == raw


def test_a_reply_with_a_function_call_needs_no_recovery_whatever_it_stripped():
    arguments = json.dumps({"path": CALL})
    guard = ResponsesStreamGuard(DEFAULT_REGISTRY)
    events = parsed(played(guard, wire_bytes(build([CALL], arguments=arguments))))
    assert not guard.recovering
    assert guard.stripped_chars == len(CALL)
    assert text_of(events, "response.function_call_arguments.delta") == arguments
    [call] = [e["item"] for e in events if e["type"] == "response.output_item.done"][1:]
    assert call["arguments"] == arguments
    assert final_texts(events) == [""] * 4


@pytest.mark.parametrize("name", ANSWERED)
def test_each_built_in_flow_as_the_mock_streams_it_shows_the_filtered_text(name: str):
    step = FLOWS[name].steps[0]
    raw = mock_stream(name)
    registry = registry_for(META.model)  # auto's, for the model the mock names
    guard = ResponsesStreamGuard(registry)
    out, rest = run(guard, raw)
    expect = FLOWS[name].expect_for(META.model)
    if expect is not None and expect.requests == 1:
        assert guard.stripped_chars == expect.stripped_chars
    assert (rest is None) == (expect is not None and expect.recovery)
    if rest is None:
        assert [e["type"] for e in parsed(out)] == ["response.created", "response.in_progress"]
        return
    out += rest
    events = parsed(out)
    assert text_of(events) == scrub(step.content, registry)
    routed = routed_reasoning(step.content, registry)  # harmony's analysis channel, as text
    assert text_of(events, "response.reasoning_text.delta") == (step.reasoning or "") + routed
    assert numbers(events) == list(range(len(events)))
    if untouchable(step.content, registry):
        assert b"".join(out) == raw


@given(st.lists(st.integers(0, 200), max_size=10))
def test_harmony_analysis_in_a_message_streams_as_a_reasoning_item_right_after_it(
    cuts: list[int],
):
    raw = wire_bytes(build(split(HARMONY_REPLY, cuts), arguments='{"path": "/a"}'))
    events = parsed(played(ResponsesStreamGuard(registry_for("gpt-oss-20b")), raw))
    assert text_of(events) == HARMONY_ANSWER
    assert text_of(events, "response.reasoning_text.delta") == HARMONY_REASONING
    assert numbers(events) == list(range(len(events)))
    added = [
        (e["output_index"], e["item"]["type"])
        for e in events
        if e["type"] == "response.output_item.added"
    ]
    assert added == [(0, "message"), (1, "reasoning"), (2, "function_call")]
    final = Response.model_validate(events[-1]["response"])
    assert [item.type for item in final.output] == ["message", "reasoning", "function_call"]
    assert final.output_text == HARMONY_ANSWER


def test_a_whole_responses_harmony_analysis_becomes_a_reasoning_item_after_its_message():
    response = whole(HARMONY_REPLY)
    assert ResponseGuard(registry_for("gpt-oss-20b")).filter(response)
    final = Response.model_validate(response)
    assert [item.type for item in final.output] == ["reasoning", "message", "reasoning"]
    assert final.output_text == HARMONY_ANSWER
    routed = response["output"][2]
    assert (routed["id"], routed["content"]) == (
        "rs_msg",
        [{"type": "reasoning_text", "text": HARMONY_REASONING}],
    )


# --- the one recovery -------------------------------------------------------------------------


def test_a_reply_of_nothing_but_markup_shows_only_its_opening_and_asks_for_the_recovery():
    first = ResponsesStreamGuard(DEFAULT_REGISTRY)
    before = recovered(first, wire_bytes(build(split(CALL, [5, 30]))))
    assert first.stripped_chars == len(CALL)
    assert [e["type"] for e in parsed(before)] == ["response.created", "response.in_progress"]


def test_the_recovery_continues_the_same_response_numbered_after_the_first():
    first = ResponsesStreamGuard(DEFAULT_REGISTRY)
    before = recovered(first, wire_bytes(build([CALL])))
    second = ResponsesStreamGuard(DEFAULT_REGISTRY, follows=first)
    events = parsed(before + played(second, wire_bytes(build([CLEAN], rid="resp_2"))))
    kinds = [e["type"] for e in events]
    assert kinds.count("response.created") == 1
    assert kinds[-1] == "response.completed"
    assert numbers(events) == list(range(len(events)))
    final = events[-1]["response"]
    assert (final["id"], final["created_at"]) == ("resp_1", 7)
    assert final_texts(events) == [CLEAN] * 4
    assert not second.malformed


def test_a_recovery_after_a_reasoning_item_keeps_it_and_takes_the_next_output_indexes():
    first = ResponsesStreamGuard(DEFAULT_REGISTRY)
    before = recovered(first, wire_bytes(build([CALL], reasoning="Let me look.")))
    second = ResponsesStreamGuard(DEFAULT_REGISTRY, follows=first)
    recovery = wire_bytes(build([CLEAN], reasoning="Plain text now.", rid="resp_2"))
    events = parsed(before + played(second, recovery))
    added = [
        (e["output_index"], e["item"]["id"])
        for e in events
        if e["type"].endswith("added") and "item" in e
    ]
    assert added == [(0, "rs_1_0"), (1, "rs_2_0"), (2, "msg_2_1")]
    output = events[-1]["response"]["output"]
    assert [item["id"] for item in output] == ["rs_1_0", "rs_2_0", "msg_2_1"]
    assert {e["output_index"] for e in events if e["type"] == "response.output_text.delta"} == {2}
    assert numbers(events) == list(range(len(events)))


def test_a_recovery_that_shows_nothing_ends_with_the_malformed_reply_error_and_failed():
    first = ResponsesStreamGuard(DEFAULT_REGISTRY)
    before = recovered(first, wire_bytes(build([CALL])))
    second = ResponsesStreamGuard(DEFAULT_REGISTRY, follows=first)
    events = parsed(before + played(second, wire_bytes(build([CALL], rid="resp_2"))))
    error, failed = events[-2:]
    assert (error["type"], error["code"], error["message"]) == (
        "error",
        "malformed_reply",
        MALFORMED_REPLY,
    )
    assert failed["type"] == "response.failed"
    assert failed["response"]["id"] == "resp_1"
    assert failed["response"]["error"]["message"] == MALFORMED_REPLY
    assert "response.completed" not in [e["type"] for e in events]
    assert numbers(events) == list(range(len(events)))
    assert second.malformed


def test_a_recovery_that_ends_without_its_completion_and_shows_nothing_is_malformed():
    first = ResponsesStreamGuard(DEFAULT_REGISTRY)
    before = recovered(first, wire_bytes(build([CALL])))
    second = ResponsesStreamGuard(DEFAULT_REGISTRY, follows=first)
    events = parsed(before + played(second, wire_bytes(build([CALL], rid="resp_2")[:-1])))
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == "malformed_reply"
    assert numbers(events) == list(range(len(events)))


def test_what_the_upstream_sends_after_the_reply_asked_for_the_recovery_is_dropped():
    first = ResponsesStreamGuard(DEFAULT_REGISTRY)
    recovered(first, wire_bytes(build([CALL])))
    assert first.event(decode(wire_bytes(build([CLEAN])))[3]) == []


def test_text_after_its_part_ended_is_filtered_too():
    events = build(["Answer."])
    events.insert(6, {**events[4], "delta": f" {CALL}late"})  # after output_text.done
    for number, event in enumerate(events):
        event["sequence_number"] = number
    out = parsed(played(ResponsesStreamGuard(DEFAULT_REGISTRY), wire_bytes(events)))
    assert text_of(out) == "Answer. late"
    assert numbers(out) == list(range(len(out)))


def test_a_markup_stream_that_ends_without_its_completion_still_gets_the_recovery():
    events = build([CALL])[:-1]
    recovered(ResponsesStreamGuard(DEFAULT_REGISTRY), wire_bytes(events))


def test_an_incomplete_reply_of_markup_gets_the_recovery_too():
    raw = wire_bytes(build([CALL], ending="response.incomplete"))
    recovered(ResponsesStreamGuard(DEFAULT_REGISTRY), raw)


def test_an_upstream_failure_is_passed_on_and_never_recovered():
    events = build([CALL])[:-1]
    events.append({"type": "error", "code": "server_error", "message": "boom", "param": None})
    events.append(
        {"type": "response.failed", "response": {**opening("resp_1"), "status": "failed"}}
    )
    for number, event in enumerate(events):
        event["sequence_number"] = number
    guard = ResponsesStreamGuard(DEFAULT_REGISTRY)
    out = parsed(played(guard, wire_bytes(events)))
    assert [e["type"] for e in out[-2:]] == ["error", "response.failed"]
    assert numbers(out) == list(range(len(out)))


# --- numbering and failures -------------------------------------------------------------------


def test_a_dropped_delta_moves_every_later_number_down_by_one():
    raw = wire_bytes(build(["Before. ", CALL, " After."]))
    events = parsed(played(ResponsesStreamGuard(DEFAULT_REGISTRY), raw))
    assert len(events) == len(build(["Before. ", CALL, " After."])) - 1
    assert numbers(events) == list(range(len(events)))


def test_a_stream_the_server_saw_break_ends_with_the_error_and_failed_after_what_went_out():
    guard = ResponsesStreamGuard(DEFAULT_REGISTRY)
    out: list[bytes] = []
    for event in decode(wire_bytes(build(["Backups run ", "nightly."])[:5])):
        out += guard.event(event)
    events = parsed(out + guard.fail("The model's reply was cut off.", "upstream_502"))
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == "upstream_502"
    assert events[-1]["response"]["id"] == "resp_1"
    assert numbers(events) == list(range(len(events)))
    assert guard.fail("again", "upstream_502") == []


def test_a_refused_recovery_fails_the_first_stream_numbered_after_what_the_client_got():
    first = ResponsesStreamGuard(DEFAULT_REGISTRY)
    before = recovered(first, wire_bytes(build([CALL])))
    refused = first.fail("Too many requests.", "upstream_429", "rate_limit_exceeded")
    events = parsed(before + refused)
    assert numbers(events) == [0, 1, 2, 3]
    assert events[-1]["response"]["error"]["code"] == "rate_limit_exceeded"


# --- hostile events ---------------------------------------------------------------------------


HOSTILE = [
    "not json",
    "[1, 2]",
    "42",
    "[" * 100_000,
    json.dumps({"type": "response.output_text.delta", "delta": 7, "sequence_number": 2}),
    json.dumps({"type": "response.output_text.delta", "delta": CALL, "output_index": "x"}),
    json.dumps({"type": "response.output_item.added", "item": "not an item", "output_index": 0}),
    json.dumps({"type": "response.output_item.done", "item": {"type": "message", "content": 5}}),
    json.dumps({"type": "response.content_part.done", "part": None, "sequence_number": True}),
    json.dumps({"type": "response.completed", "response": {"output": "nope"}}),
    json.dumps({"type": "response.output_text.done", "text": None, "output_index": 0}),
    json.dumps({"type": ["not", "a", "type"], "delta": "x"}),
    json.dumps({"type": "response.output_text.delta", "delta": "\ud800" + CALL}),
    json.dumps({"type": "response.created", "response": "nope"}),
    json.dumps(
        {"type": "response.output_item.added", "item": {"type": "message"}, "output_index": 1}
    ),
    json.dumps({"type": "response.output_item.done", "item": [], "output_index": 0}),
    json.dumps({"type": "response.completed", "response": "nope"}),
]


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_event_never_breaks_the_guard(data: str):
    guard = ResponsesStreamGuard(DEFAULT_REGISTRY)
    events = build(["Back", CALL, "ups."])
    raw = wire_bytes(events[:4]) + raw_event("x", data) + wire_bytes(events[4:])
    out = played(guard, raw)
    text = b"".join(out)
    assert CALL.encode() not in text
    if not data.startswith("{"):
        assert raw_event("x", data) in out  # not ours to judge: passed on as it came


def test_an_event_that_is_not_json_ends_the_hold_and_goes_out_in_order():
    events = build([CALL])
    raw = wire_bytes(events[:4]) + raw_event(None, "junk") + wire_bytes(events[4:])
    out = recovered(ResponsesStreamGuard(DEFAULT_REGISTRY), raw)  # still only markup
    assert out[4] == b"data: junk\n\n"
    assert [json.loads(e.data)["type"] for e in decode(b"".join(out[2:4]))] == [
        "response.output_item.added",
        "response.content_part.added",
    ]


def test_a_part_that_only_comes_whole_is_filtered_and_counted():
    events = [e for e in build([f"Answer. {CALL}"]) if e["type"] != "response.output_text.delta"]
    guard = ResponsesStreamGuard(DEFAULT_REGISTRY)
    out = parsed(played(guard, wire_bytes(events)))
    assert final_texts(out) == ["Answer. "] * 4
    assert guard.stripped_chars == len(CALL)


def test_a_clean_top_level_output_text_leaves_the_completion_as_it_came():
    events = build([CLEAN])
    events[-1]["response"]["output_text"] = CLEAN
    raw = wire_bytes(events)
    assert b"".join(played(ResponsesStreamGuard(DEFAULT_REGISTRY), raw)) == raw


def test_a_top_level_output_text_is_the_streamed_text():
    events = build(["Answer. ", CALL])
    events[-1]["response"]["output_text"] = f"Answer. {CALL}"
    out = parsed(played(ResponsesStreamGuard(DEFAULT_REGISTRY), wire_bytes(events)))
    assert out[-1]["response"]["output_text"] == "Answer. "


def test_an_event_without_an_event_line_keeps_its_form():
    event = build([CLEAN])[0]
    data = json.dumps(event)
    assert raw_event(None, data) == b"data: " + data.encode() + b"\n\n"
    assert raw_event("a", "x\ny") == b"event: a\ndata: x\ndata: y\n\n"
    assert event_bytes({"type": "bad\ntype"}).startswith(b"data: ")


# --- whole ------------------------------------------------------------------------------------


def whole(text: str, **extra: Any) -> dict[str, Any]:
    return {**mock_response(FLOWS["clean"].steps[0], META, ASKED), **extra} | {
        "output": [
            {
                "id": "rs",
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": CALL}],
            },
            {
                "id": "msg",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        ]
    }


def test_a_whole_clean_response_is_left_alone():
    response = whole(CLEAN, output_text=CLEAN)
    guard = ResponseGuard(DEFAULT_REGISTRY)
    assert not guard.filter(response)
    assert not guard.wants_recovery


def test_a_whole_response_has_its_answer_filtered_and_its_reasoning_left_alone():
    response = whole(f"Before. {CALL} After.", output_text=f"Before. {CALL} After.")
    guard = ResponseGuard(DEFAULT_REGISTRY)
    assert guard.filter(response)
    parsed_response = Response.model_validate(response)
    assert parsed_response.output_text == "Before.  After." == response["output_text"]
    assert response["output"][0]["content"][0]["text"] == CALL
    assert guard.stripped_chars == len(CALL)


def test_a_whole_response_of_markup_wants_the_recovery_and_one_of_markup_again_is_malformed():
    first = ResponseGuard(DEFAULT_REGISTRY)
    first.filter(whole(CALL))
    assert first.wants_recovery
    second = ResponseGuard(DEFAULT_REGISTRY, follows=first)
    second.filter(whole(CALL))
    assert second.malformed
    clean = ResponseGuard(DEFAULT_REGISTRY, follows=first)
    clean.filter(whole(CLEAN))
    assert not clean.malformed


def test_a_whole_response_with_a_function_call_needs_no_recovery():
    response = whole(CALL)
    response["output"].append(
        {"type": "function_call", "name": "read", "arguments": "{}", "call_id": "c"}
    )
    guard = ResponseGuard(DEFAULT_REGISTRY)
    guard.filter(response)
    assert guard.tool_calls
    assert not guard.wants_recovery


def test_a_top_level_output_text_that_is_not_the_parts_is_scrubbed_on_its_own():
    response = whole(CLEAN, output_text=f"Other {CALL}")
    guard = ResponseGuard(DEFAULT_REGISTRY)
    assert guard.filter(response)
    assert response["output_text"] == "Other "
    assert guard.stripped_chars == 0


# --- the recovery request ---------------------------------------------------------------------

TOOLS = {
    "tools": [{"type": "function", "name": "read"}],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
}


def test_the_correction_is_appended_to_the_instructions_and_the_tools_removed():
    body = {"model": "m", "instructions": "Be brief.", "input": "Q", "stream": True, **TOOLS}
    assert recovery_body(body) == {
        "model": "m",
        "instructions": f"Be brief.\n\n{CORRECTION_INSTRUCTION}",
        "input": "Q",
        "stream": True,
    }


@pytest.mark.parametrize("role", ["system", "developer"])
def test_without_instructions_the_inputs_system_message_takes_the_correction(role: str):
    items: list[Any] = [
        {"role": role, "content": "Be brief.", "type": "message"},
        {"role": "user", "content": "Q"},
    ]
    recovery = recovery_body({"model": "m", "input": items, **TOOLS})
    assert "instructions" not in recovery
    assert recovery["input"] == [
        {"role": role, "content": f"Be brief.\n\n{CORRECTION_INSTRUCTION}", "type": "message"},
        {"role": "user", "content": "Q"},
    ]
    assert items[0]["content"] == "Be brief."  # the client's body is untouched


def test_a_system_message_given_as_parts_gets_an_input_text_part():
    parts = [{"type": "input_text", "text": "Be brief."}]
    recovery = recovery_body({"input": [{"role": "system", "content": parts}], "instructions": ""})
    assert recovery["input"][0]["content"] == [
        *parts,
        {"type": "input_text", "text": CORRECTION_INSTRUCTION},
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"input": "Q"},
        {"input": [{"role": "user", "content": "Q"}]},
        {"input": [{"role": "system", "content": "S"}, "not an item"]},
        {"input": "Q", "instructions": "   "},
    ],
    ids=["string-input", "no-system-message", "hostile-item", "blank-instructions"],
)
def test_otherwise_the_correction_becomes_the_instructions(body: dict[str, Any]):
    recovery = recovery_body(body)
    assert recovery["instructions"] == CORRECTION_INSTRUCTION
    assert recovery["input"] == body["input"]
