"""mock_llm.record.recording: streams and answers as recorded steps, and which flow they go in.

The strongest check is a loop through the mock's own wire format: a step's stream, read by
the parser, gives a step whose stream is byte for byte the same."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm import builtin_flows
from mock_llm.flows.model import (
    CutFault,
    ErrorEventFault,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    Step,
    ToolCall,
)
from mock_llm.record.recording import (
    Recording,
    RequestTurn,
    StreamParser,
    clean_text,
    completion_step,
    description,
    error_step,
    read_json,
    request_turn,
    retry_after,
)

from ...conftest import plan, sent, sent_body

FLOWS = builtin_flows()


def record(data: bytes, *, broken: bool = False, size: int | None = None) -> Step:
    """The step the parser makes of `data`, fed whole or `size` bytes at a time."""
    parser = StreamParser()
    size = size or max(1, len(data))
    for start in range(0, len(data), size):
        parser.feed(data[start : start + size], float(start))
    return parser.step(broken)


def sse(*events: object) -> bytes:
    return b"".join(
        b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n"
        for e in events
    )


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


STREAMED = [
    (name, i, step)
    for name, flow in FLOWS.items()
    for i, step in enumerate(flow.steps)
    if not isinstance(step.fault, HttpFault)
]


@pytest.mark.sweep
@pytest.mark.parametrize(
    ("name", "index", "step"), STREAMED, ids=[f"{n}-{i + 1}" for n, i, _ in STREAMED]
)
def test_every_built_in_stream_recorded_replays_byte_for_byte(name: str, index: int, step: Step):
    original = plan(step)
    recorded = record(sent(original), broken=original.ending == "abort", size=7)
    replayed = plan(recorded)
    assert sent(replayed) == sent(original)
    assert replayed.ending == original.ending
    assert step.content.startswith(recorded.content)  # all of it, unless cut short
    assert recorded.reasoning == step.reasoning


def test_the_usage_chunk_is_counted_but_not_recorded():
    step = FLOWS["cut-eof"].steps[0]
    original = plan(step, include_usage=True)
    assert sent(plan(record(sent(original)), include_usage=True)) == sent(original)


def test_gaps_are_measured_from_the_request_then_from_the_chunk_before():
    parser = StreamParser()
    parser.feed(sse(chunk({"role": "assistant", "content": ""})), 40.0)
    parser.feed(sse(chunk({"content": "a"})), 100.0)
    parser.feed(sse(chunk({"content": "b"}), chunk({"content": "c"}))[:-3], 130.0)
    parser.feed(b"}\n\n", 145.5)  # the event that ends here arrived here
    parser.feed(sse(chunk({}, "stop"), b"[DONE]"), 150.0)
    step = parser.step(broken=False)
    assert [(c.text, c.after_ms) for c in step.recorded] == [
        ("a", 100.0),
        ("b", 30.0),
        ("c", 15.5),
    ]
    assert (step.finish_reason, step.fault) == ("stop", None)


def test_lines_may_end_in_crlf_and_comments_and_other_fields_are_ignored():
    data = (
        b": keep-alive\r\nevent: message\r\nid: 1\r\ndata: "
        + json.dumps(chunk({"content": "hi"})).encode()
        + b"\r\n\r\ndata: [DONE]\r\n\r\n"
    )
    step = record(data, size=1)
    assert step.content == "hi"
    assert step.fault is None


def test_an_event_of_several_data_lines_is_their_join():
    payload = json.dumps(chunk({"content": "hi"}), indent=1).encode()
    data = b"".join(b"data: " + line + b"\n" for line in payload.splitlines()) + b"\n"
    assert record(data + sse(b"[DONE]")).content == "hi"


def test_a_stream_that_breaks_is_a_cut_abort_and_one_that_stops_a_cut_eof():
    body = sse(chunk({"role": "assistant", "content": ""}), chunk({"content": "a"}))
    assert record(body, broken=True).fault == CutFault(2, "abort")
    assert record(body).fault == CutFault(2, "eof")
    assert record(b"", broken=True).fault == CutFault(0, "abort")


def test_an_eof_after_the_finish_chunk_fires_after_it():
    body = sse(chunk({"content": "a"}), chunk({}, "length"))
    step = record(body)
    assert (step.finish_reason, step.fault) == ("length", CutFault(3, "eof"))


def test_an_error_event_ends_the_recording_where_it_came():
    error = {"error": {"message": "boom", "type": "server_error", "code": "x1"}}
    body = sse(chunk({"content": "a"}), error, chunk({"content": "never"}), b"[DONE]")
    step = record(body)
    assert step.content == "a"
    assert step.fault == ErrorEventFault(2, "boom", "server_error", "x1")


def test_a_line_that_is_not_json_is_a_malformed_fault_and_the_stream_goes_on():
    body = sse(chunk({"content": "a"}), b"{oops\xff", chunk({"content": "b"}), b"[DONE]")
    step = record(body)
    assert step.content == "ab"
    assert step.fault == MalformedFault(2, "{oops\ufffd")


def test_reasoning_in_either_field_or_both_is_recorded_once_with_its_field():
    both = record(sse(chunk({"reasoning_content": "r", "reasoning": "r"}), b"[DONE]"))
    assert (both.reasoning, both.reasoning_field) == ("r", "both")
    alone = record(sse(chunk({"reasoning": "r", "reasoning_content": None}), b"[DONE]"))
    assert (alone.reasoning, alone.reasoning_field) == ("r", "reasoning")
    plain = record(sse(chunk({"content": "a"}), b"[DONE]"))
    assert plain.reasoning_field is None


def test_a_delta_with_two_parts_is_two_chunks_the_second_without_gap():
    body = sse(chunk({"reasoning_content": "r", "content": "c"}), b"[DONE]")
    step = record(body)
    assert [(c.part, c.text) for c in step.recorded] == [("reasoning", "r"), ("content", "c")]
    assert step.recorded[1].after_ms == 0


def test_tool_calls_open_with_their_first_delta_and_keep_id_and_name():
    opening = {"index": 0, "id": "c1", "type": "function", "function": {"name": "read"}}
    body = sse(
        chunk({"tool_calls": [opening]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        chunk(
            {
                "tool_calls": [
                    {"index": 1, "id": "c2", "function": {"name": "ls", "arguments": "{}"}}
                ]
            }
        ),
        chunk({}, "tool_calls"),
        b"[DONE]",
    )
    step = record(body)
    assert step.tool_calls == (ToolCall("read", '{"a": 1}', "c1"), ToolCall("ls", "{}", "c2"))
    assert [(c.call, c.text) for c in step.recorded] == [
        (0, ""),
        (0, '{"a"'),
        (0, ": 1}"),
        (1, "{}"),
    ]
    assert step.finish_reason == "tool_calls"


def test_parts_out_of_the_mocks_order_are_put_in_it():
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    body = sse(chunk({"tool_calls": [call]}), chunk({"content": "late"}), b"[DONE]")
    parser = StreamParser()
    parser.feed(body[: len(body) // 2], 10.0)
    parser.feed(body[len(body) // 2 :], 50.0)
    step = parser.step(broken=False)
    assert parser.reordered
    assert [(c.part, c.after_ms) for c in step.recorded] == [("content", 50.0), ("call", 0.0)]


def test_lone_surrogates_become_replacement_characters():
    body = b'data: {"choices":[{"delta":{"content":"a\\ud800b\\ud83d\\ude00"}}]}\n\n'
    assert record(body + sse(b"[DONE]")).content == "a\ufffdb\U0001f600"
    assert clean_text("plain") == "plain"


def test_unknown_finish_reasons_map_or_are_left_out():
    assert record(sse(chunk({"content": "a"}, "function_call"), b"[DONE]")).finish_reason == (
        "tool_calls"
    )
    assert record(sse(chunk({"content": "a"}, "weird"), b"[DONE]")).finish_reason is None


@st.composite
def recorded_steps(draw: st.DrawFn) -> Step:
    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
    reasoning = draw(st.lists(text.filter(bool), max_size=4))
    content = draw(st.lists(text.filter(bool), max_size=4))
    # a call opens with a piece that may be empty; a later delta with no text is not recorded
    more = st.lists(text.filter(bool), max_size=2)
    calls = draw(st.lists(st.tuples(text, more).map(lambda t: [t[0], *t[1]]), max_size=2))
    chunks = [RecordedChunk("reasoning", t) for t in reasoning]
    chunks += [RecordedChunk("content", t) for t in content]
    chunks += [RecordedChunk("call", t, i) for i, pieces in enumerate(calls) for t in pieces]
    tool_calls = tuple(
        ToolCall(draw(text), "".join(pieces), f"call_{i}") for i, pieces in enumerate(calls)
    )
    return Step(
        content="".join(content),
        reasoning="".join(reasoning),
        tool_calls=tool_calls,
        finish_reason=draw(st.sampled_from([None, "stop", "length"])),
        recorded=tuple(chunks),
    )


@given(recorded_steps(), st.integers(1, 50))
def test_any_recorded_step_records_back_to_the_same_stream(step: Step, size: int):
    original = sent(plan(step))
    again = record(original, size=size)
    assert [(c.part, c.text, c.call) for c in again.recorded] == [
        (c.part, c.text, c.call) for c in step.recorded
    ]
    assert sent(plan(again)) == original


# --- whole answers and errors ------------------------------------------------------------


@pytest.mark.parametrize("flow", ["clean", "thinking", "multi-tool", "tool-then-answer", "length"])
def test_a_whole_answer_records_as_a_step_that_answers_the_same(flow: str):
    step = FLOWS[flow].steps[0]
    original = plan(step, stream=False)
    recorded = completion_step(sent(original))
    assert recorded.recorded == ()
    assert sent_body(plan(recorded, stream=False)) == sent_body(original)


def test_a_whole_answer_that_is_not_json_is_malformed():
    assert completion_step(b"{oops\nmore").fault == MalformedFault(0, "{oops more")
    assert completion_step(b'{"error": {"message": "no"}}').fault == ErrorEventFault(
        0, "no", "server_error", None
    )


def test_an_error_status_is_an_http_fault_with_the_error_body_and_retry_after():
    body = b'{"error": {"message": "slow down", "type": "requests", "code": 42}}'
    step = error_step(429, {"retry-after": "2.5"}, body)
    assert step.fault == HttpFault(429, "slow down", "requests", "42", 2.5)
    assert error_step(503, {}, b"<html>Bad gateway</html>").fault == HttpFault(
        503, "<html>Bad gateway</html>", "server_error", None, None
    )
    assert error_step(401, {}, b'{"error": "no key"}').fault == HttpFault(
        401, "no key", "invalid_request_error", None, None
    )
    assert error_step(404, {}, b'{"detail": "Not Found"}').fault == HttpFault(
        404, "Not Found", "invalid_request_error", None, None
    )
    assert error_step(500, {}, b"").fault == HttpFault(500, "HTTP 500", "server_error", None, None)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("1", 1.0),
        (" 0.5 ", 0.5),
        ("-1", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),
    ],
)
def test_retry_after_is_kept_in_seconds_only(value: str | None, seconds: float | None):
    assert retry_after(value) == seconds


# --- naming --------------------------------------------------------------------------------


def body(*messages: tuple[str, str]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": r, "content": c} for r, c in messages]}


def test_a_trigger_names_the_flow_and_its_key_the_turn():
    assert request_turn(body(("user", "hi [[mock:clean#k1]]"))) == RequestTurn("clean", "k1", True)
    assert request_turn(body(("user", "[[mock:clean]]"))) == RequestTurn("clean", None, True)


def test_without_a_trigger_the_flow_is_named_from_the_turns_messages():
    first = request_turn(body(("system", "s"), ("user", "When?")))
    assert re.fullmatch(r"rec-[0-9a-f]{12}", first.name)
    assert first.first
    tool_round = request_turn(
        body(("system", "s"), ("user", "When?"), ("assistant", ""), ("tool", "notes"))
    )
    assert (tool_round.name, tool_round.first) == (first.name, False)
    assert request_turn(body(("system", "other"), ("user", "When?"))).name != first.name


def test_a_malformed_trigger_or_a_body_without_messages_is_hashed():
    assert request_turn(body(("user", "[[mock:bad name]]"))).name.startswith("rec-")
    assert request_turn(None).name == request_turn({"messages": 5}).name


def test_turns_start_flows_and_later_requests_add_steps():
    recording = Recording()
    a, b = Step(content="a"), Step(content="b")
    assert recording.add(RequestTurn("rec-1", None, True), a, "d") == "rec-1"
    assert recording.add(RequestTurn("rec-1", None, False), b, "d") == "rec-1"
    assert recording.add(RequestTurn("rec-1", None, True), a, "d") == "rec-1-2"
    assert recording.add(RequestTurn("rec-1", None, False), b, "d") == "rec-1-2"
    assert recording.add(RequestTurn("rec-9", None, False), b, "d") == "rec-9"  # began earlier
    assert [len(f.steps) for f in recording.flows.values()] == [2, 2, 1]


def test_a_keyed_turn_is_its_name_and_key_as_on_the_mock():
    recording = Recording()
    step = Step(content="x")
    assert recording.add(RequestTurn("clean", "k1", True), step, "d") == "clean"
    assert recording.add(RequestTurn("clean", "k2", True), step, "d") == "clean-2"
    assert recording.add(RequestTurn("clean", "k1", True), step, "d") == "clean"  # a recovery
    assert len(recording.flows["clean"].steps) == 2
    assert recording.flows["clean"].description == "d"


def test_a_continued_recording_keeps_its_names_taken():
    recording = Recording(flows={"clean": FLOWS["clean"]})
    assert recording.add(RequestTurn("clean", "k", True), Step(), "d") == "clean-2"


def test_the_description_says_from_where_when_and_which_model():
    text = description("http://h:1/v1", "2026-01-02T03:04:05Z", "lfm2")
    assert text == (
        "Recorded from http://h:1/v1 at 2026-01-02T03:04:05Z (model lfm2) "
        "by python -m mock_llm record."
    )
    assert "(model" not in description("u", "t", None)


DEEP = b"[" * 100_000
"""JSON nested past the parser's recursion limit (regression: RecursionError escaped the
recorder, lost the exchange and left `wait_for` to time out)."""


def test_json_nested_too_deep_is_read_as_no_json():
    assert read_json(DEEP) is None
    assert read_json(b'{"a": [1]}') == {"a": [1]}


def test_a_stream_line_nested_too_deep_is_a_malformed_fault():
    step = record(sse(chunk({"content": "a"}), DEEP, b"[DONE]"))
    assert step.content == "a"
    assert isinstance(step.fault, MalformedFault)


def test_answers_nested_too_deep_are_malformed_or_their_status():
    assert isinstance(completion_step(DEEP).fault, MalformedFault)
    fault = error_step(400, {}, DEEP).fault
    assert isinstance(fault, HttpFault)
    assert fault.status == 400


def test_a_request_nested_too_deep_is_named_by_its_hash():
    assert request_turn(read_json(DEEP)).name.startswith("rec-")
