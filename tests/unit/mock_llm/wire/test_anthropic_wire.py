"""mock_llm.wire.anthropic and the Messages API side of response_plan: typed SSE events,
whole messages, pauses, faults. Every event and every message is also validated against the
official SDK's own models (`RawMessageStreamEvent`, `Message`), which reject a missing or
mistyped field, and streams are folded by the SDK's own stream accumulator."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.chunking import split
from mock_llm.flows.model import (
    Chunking,
    CutFault,
    ErrorEventFault,
    FinishReason,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    StallFault,
    Step,
    ToolCall,
)
from mock_llm.play.response_plan import Pause, ResponsePlan, Send
from mock_llm.wire import openai as openai_wire
from mock_llm.wire.anthropic import STOP_REASONS, signature, stream_events
from servekit.error_bodies import anthropic_error_type as error_type

from ....support.cases import check_each
from ...conftest import CALL, FULL, MESSAGES, META, built_in_answers, plan, sent, typed_events

EVENTS = pydantic.TypeAdapter[RawMessageStreamEvent](RawMessageStreamEvent)


def messages_plan(step: Step, *, stream: bool = True) -> ResponsePlan:
    return plan(step, stream=stream, api="anthropic")


def parse(raw: bytes) -> list[dict[str, Any]]:
    """The events of a stream, each accepted by the SDK's models (but `ping`, which the SDK
    skips, and `error`, which it raises)."""
    return typed_events(raw, EVENTS, unmodelled=("ping", "error"))


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def deltas(events: list[dict[str, Any]], kind: str, field: str) -> list[str]:
    return [
        e["delta"][field]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == kind
    ]


def accumulated(raw: bytes) -> dict[str, Any]:
    """The message the SDK's stream helper builds from the stream (`get_final_message`)."""
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for event in parse(raw):
        if event["type"] != "ping":
            parsed = EVENTS.validate_python(event)
            snapshot = accumulate_event(event=parsed, current_snapshot=snapshot, json_bufs=buffers)
    return comparable(snapshot.model_dump(mode="json"))


def whole(step: Step) -> dict[str, Any]:
    body = json.loads(sent(messages_plan(step, stream=False)))
    return comparable(Message.model_validate(body).model_dump(mode="json"))


def comparable(message: dict[str, Any]) -> dict[str, Any]:
    """A message without what the SDK's parsed snapshot adds (`parsed_output`)."""
    blocks = [{k: v for k, v in b.items() if k != "parsed_output"} for b in message["content"]]
    return {**message, "content": blocks}


def test_a_full_step_is_the_documented_event_sequence():
    plan = messages_plan(FULL)
    assert dict(plan.headers)["content-type"].startswith("text/event-stream")
    events = parse(sent(plan))
    reasoning, content = split(FULL.reasoning, FULL.chunking), split(FULL.content, FULL.chunking)
    arguments = split(CALL.arguments, FULL.chunking)
    delta = "content_block_delta"
    assert types(events) == [
        "message_start",
        "ping",
        "content_block_start",
        *[delta] * len(reasoning),
        delta,  # the signature
        "content_block_stop",
        "content_block_start",
        *[delta] * len(content),
        "content_block_stop",
        "content_block_start",
        *[delta] * len(arguments),
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert b"[DONE]" not in sent(plan)


def test_blocks_are_announced_empty_and_each_event_names_its_blocks_index():
    events = parse(sent(messages_plan(FULL)))
    started = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert started == [
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "toolu_mock7_0", "name": "read", "input": {}},
    ]
    indexes = [e["index"] for e in events if "index" in e]
    assert indexes == sorted(indexes)
    assert {e["index"] for e in events if e["type"] == "content_block_stop"} == {0, 1, 2}


def test_the_deltas_are_the_steps_chunks():
    step = Step(content="a b c", reasoning="x y", tool_calls=(CALL,), chunking=Chunking("size", 4))
    events = parse(sent(messages_plan(step)))
    assert deltas(events, "thinking_delta", "thinking") == split("x y", step.chunking)
    assert deltas(events, "text_delta", "text") == ["a b ", "c"]
    assert deltas(events, "input_json_delta", "partial_json") == split(
        CALL.arguments, step.chunking
    )


def test_a_thinking_block_carries_its_signature_just_before_it_stops():
    events = parse(sent(messages_plan(Step(content="a", reasoning="x y"))))
    stop = types(events).index("content_block_stop")
    assert events[stop - 1]["delta"] == {"type": "signature_delta", "signature": signature("x y")}
    assert whole(Step(content="a", reasoning="x y"))["content"][0]["signature"] == signature("x y")


@pytest.mark.parametrize(
    ("finish", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("tool_calls", "tool_use"),
        ("length", "max_tokens"),
        ("content_filter", "refusal"),
    ],
)
def test_the_stop_reason_is_the_finish_reasons(finish: FinishReason, stop_reason: str):
    step = Step(content="Backups run nightly at", finish_reason=finish)
    events = parse(sent(messages_plan(step)))
    [message_delta] = [e for e in events if e["type"] == "message_delta"]
    assert message_delta["delta"] == {"stop_reason": stop_reason, "stop_sequence": None}
    assert whole(step)["stop_reason"] == stop_reason


def test_a_tool_call_makes_the_stop_reason_tool_use():
    assert whole(Step(tool_calls=(CALL,)))["stop_reason"] == "tool_use"


def test_message_start_opens_with_no_content_and_message_delta_carries_the_usage():
    events = parse(sent(messages_plan(FULL)))
    opening = events[0]["message"]
    assert (opening["id"], opening["model"], opening["content"]) == ("msg_mock7", "lfm2-test", [])
    assert (opening["stop_reason"], opening["usage"]["output_tokens"]) == (None, 0)
    counts = openai_wire.usage(FULL, MESSAGES)
    assert opening["usage"]["input_tokens"] == counts["prompt_tokens"]
    usage = events[-2]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (
        counts["prompt_tokens"],
        counts["completion_tokens"],
    )
    reasoning = counts["completion_tokens_details"]["reasoning_tokens"]
    assert usage["output_tokens_details"] == {"thinking_tokens": reasoning}
    assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0


def test_the_whole_message_is_the_blocks_finished():
    body = json.loads(sent(messages_plan(FULL, stream=False)))
    assert (body["id"], body["type"], body["role"], body["model"]) == (
        "msg_mock7",
        "message",
        "assistant",
        "lfm2-test",
    )
    assert body["content"] == [
        {"type": "thinking", "thinking": FULL.reasoning, "signature": signature(FULL.reasoning)},
        {"type": "text", "text": FULL.content},
        {
            "type": "tool_use",
            "id": "toolu_mock7_0",
            "name": "read",
            "input": json.loads(CALL.arguments),
        },
    ]


arguments = st.one_of(
    st.text(max_size=20),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3).map(
        json.dumps
    ),
)
steps = st.builds(
    Step,
    content=st.text(max_size=40),
    reasoning=st.text(max_size=20),
    tool_calls=st.lists(
        st.builds(ToolCall, name=st.sampled_from(["read", "grep"]), arguments=arguments),
        max_size=2,
    ).map(tuple),
    finish_reason=st.sampled_from([None, "stop", "length", "tool_calls", "content_filter"]),
    chunking=st.sampled_from(
        [Chunking("whole"), Chunking("char"), Chunking("word"), Chunking("size", 3)]
    ),
)


@given(step=steps)
def test_the_sdks_fold_of_the_stream_is_the_whole_message_for_any_step_and_chunking(step: Step):
    assert accumulated(sent(messages_plan(step))) == whole(step)


@pytest.mark.parametrize("arguments", ["not json", "[1, 2]", '"text"', ""])
def test_arguments_that_are_not_an_object_are_an_empty_input_and_stream_no_json(arguments: str):
    step = Step(tool_calls=(ToolCall("read", arguments),), chunking=Chunking("char"))
    events = parse(sent(messages_plan(step)))
    assert deltas(events, "input_json_delta", "partial_json") == []
    assert whole(step)["content"][0]["input"] == {}


def test_a_tool_call_only_step_has_no_text_block_and_keeps_a_calls_own_id():
    step = Step(tool_calls=(CALL, ToolCall("list", "{}", id="toolu_given")))
    content = whole(step)["content"]
    assert [(b["type"], b["id"]) for b in content] == [
        ("tool_use", "toolu_mock7_0"),
        ("tool_use", "toolu_given"),
    ]


def test_an_empty_step_still_answers_with_an_empty_text_block():
    events = parse(sent(messages_plan(Step())))
    assert deltas(events, "text_delta", "text") == []
    assert whole(Step())["content"] == [{"type": "text", "text": "", "citations": None}]


def frames(step: Step) -> list[tuple[float, bytes]]:
    return stream_events(step, META, MESSAGES)


def test_time_to_first_token_comes_before_the_first_block_and_delay_between_deltas():
    step = Step(content="a b c", ttft_ms=200, delay_ms=50)
    plan = messages_plan(step)
    timed = [
        (json.loads(data.split(b"\ndata: ")[1])["type"], pause) for pause, data in frames(step)
    ]
    assert [(kind, pause) for kind, pause in timed if pause] == [
        ("content_block_start", 0.2),
        ("content_block_delta", 0.05),
        ("content_block_delta", 0.05),
    ]
    assert [a.seconds for a in plan.actions if isinstance(a, Pause)] == [0.2, 0.05, 0.05]


def test_a_recorded_step_streams_its_recorded_chunks_after_their_gaps():
    recorded = (
        RecordedChunk("content", "Hel", after_ms=100),
        RecordedChunk("content", "lo", after_ms=20),
        RecordedChunk("call", "", call=0, after_ms=5),  # the opening: id and name, no text
        RecordedChunk("call", '{"a": 1}', call=0, after_ms=7),
    )
    step = Step(content="Hello", tool_calls=(ToolCall("read", '{"a": 1}'),), recorded=recorded)
    timed = [(json.loads(data.split(b"\ndata: ")[1]), pause) for pause, data in frames(step)]
    assert [(e["type"], e.get("delta"), pause) for e, pause in timed if pause] == [
        ("content_block_start", None, 0.1),  # the text block, when its first chunk is due
        ("content_block_delta", {"type": "text_delta", "text": "lo"}, 0.02),
        ("content_block_start", None, 0.005),  # the tool use, at its opening
        ("content_block_delta", {"type": "input_json_delta", "partial_json": '{"a": 1}'}, 0.007),
    ]


def test_arguments_that_are_not_an_object_keep_their_recorded_pauses():
    recorded = (
        RecordedChunk("call", "", call=0, after_ms=5),
        RecordedChunk("call", "not", call=0, after_ms=7),
        RecordedChunk("call", " json", call=0, after_ms=9),
    )
    step = Step(tool_calls=(ToolCall("read", "not json"),), recorded=recorded)
    assert sum(pause for pause, _ in frames(step)) == pytest.approx(0.021)


def test_every_built_in_flow_plays_as_events_the_sdk_accepts_and_folds_to_its_message():
    """Every answering step of every built-in flow: the stream folds (as the SDK's helper
    folds it) to the whole answer, which says the step's text, thinking, tool uses and stop
    reason (over HTTP, with the SDK's client: tests/integration/mock_llm/test_anthropic_api.py)."""

    def check(step: Step) -> None:
        raw = sent(messages_plan(step))
        assert types(parse(raw))[-1] == "message_stop"
        message = whole(step)
        assert accumulated(raw) == message

        def blocks(kind: str, field: str) -> list[Any]:
            return [b[field] for b in message["content"] if b["type"] == kind]

        assert "".join(blocks("text", "text")) == step.content
        assert "".join(blocks("thinking", "thinking")) == step.reasoning
        uses = list(zip(blocks("tool_use", "name"), blocks("tool_use", "input"), strict=True))
        assert uses == [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
        assert message["stop_reason"] == STOP_REASONS[step.resolved_finish_reason]

    steps = [(name, step) for name, step in built_in_answers() if step.extract is None]
    assert check_each(steps, check) == len(steps) > 0


# --- faults -----------------------------------------------------------------------------------


def test_an_http_fault_is_anthropics_error_body_with_its_status_and_retry_after():
    fault = HttpFault(status=429, message="Slow down.", type="rate_limit_exceeded", retry_after=1)
    plan = messages_plan(Step(fault=fault))
    assert (plan.status, dict(plan.headers)["retry-after"]) == (429, "1")
    assert json.loads(sent(plan)) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Slow down."},
    }


@pytest.mark.parametrize(
    ("status", "given", "expected"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "invalid_request_error", "authentication_error"),
        (404, None, "not_found_error"),
        (413, None, "request_too_large"),
        (418, None, "invalid_request_error"),
        (429, "rate_limit_exceeded", "rate_limit_error"),
        (500, "server_error", "api_error"),
        (503, "server_error", "api_error"),
        (504, None, "timeout_error"),
        (529, "server_error", "overloaded_error"),
        (500, "overloaded_error", "overloaded_error"),
        (503, "billing_error", "billing_error"),
    ],
)
def test_an_errors_type_is_its_own_when_anthropic_has_it_else_the_statuss(
    status: int, given: str | None, expected: str
):
    assert error_type(status, given) == expected


def test_an_error_event_is_an_error_event_that_ends_the_stream():
    fault = ErrorEventFault(after_chunks=3, message="Crashed.")
    plan = messages_plan(Step(content="a b c", fault=fault))
    events = parse(sent(plan))
    assert types(events) == ["message_start", "ping", "content_block_start", "error"]
    assert events[-1] == {"type": "error", "error": {"type": "api_error", "message": "Crashed."}}
    assert plan.ending == "eof"


def test_an_error_event_after_the_last_event_follows_message_stop():
    step = Step(content="a", fault=ErrorEventFault(99, "No.", type="overloaded_error"))
    events = parse(sent(messages_plan(step)))
    assert types(events)[-2:] == ["message_stop", "error"]
    assert events[-1]["error"]["type"] == "overloaded_error"


def test_a_malformed_line_goes_under_an_event_name_and_the_stream_goes_on():
    plan = messages_plan(Step(content="a b c", fault=MalformedFault(after_chunks=2)))
    blocks = sent(plan).split(b"\n\n")
    assert blocks[2] == b"event: content_block_delta\ndata: {this is not json"
    good = b"\n\n".join(blocks[:2] + blocks[3:])
    assert types(parse(good))[-1] == "message_stop"
    assert plan.ending == "complete"


def test_a_cut_ends_after_that_many_events_and_counts_them():
    plan = messages_plan(Step(content="a b c d e f", fault=CutFault(after_chunks=6, mode="abort")))
    assert plan.ending == "abort"
    assert sum(a.chunks for a in plan.actions if isinstance(a, Send)) == 6
    assert deltas(parse(sent(plan)), "text_delta", "text") == ["a", " b", " c"]


def test_a_clean_eof_ends_with_no_message_stop():
    plan = messages_plan(Step(content="a b c d e f", fault=CutFault(after_chunks=6, mode="eof")))
    assert plan.ending == "eof"
    assert "message_stop" not in types(parse(sent(plan)))


def test_a_stall_pauses_mid_stream_then_finishes():
    plan = messages_plan(Step(content="a b", fault=StallFault(after_chunks=2, seconds=4)))
    assert Pause(4) in plan.actions
    assert types(parse(sent(plan)))[-1] == "message_stop"


def test_an_error_event_in_a_whole_answer_is_a_500_with_anthropics_error_body():
    plan = messages_plan(Step(content="x", fault=ErrorEventFault(0, "No.")), stream=False)
    assert plan.status == 500
    assert json.loads(sent(plan)) == {
        "type": "error",
        "error": {"type": "api_error", "message": "No."},
    }


def test_a_cut_whole_answer_sends_half_its_declared_body():
    plan = messages_plan(Step(content="x y z", fault=CutFault(after_chunks=1)), stream=False)
    assert plan.ending == "abort"
    assert int(dict(plan.headers)["content-length"]) > len(sent(plan))


def test_a_malformed_whole_answer_is_the_line():
    plan = messages_plan(Step(content="x", fault=MalformedFault(after_chunks=1)), stream=False)
    assert sent(plan) == b"{this is not json"
