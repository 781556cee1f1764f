"""mock_llm.wire.responses and the Responses side of response_plan: typed SSE events, whole
responses, pauses, faults. Every event and every response is also validated against the
official SDK's own models (`ResponseStreamEvent`, `Response`), which reject a missing or
mistyped field."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from mock_llm.flows.chunking import split
from mock_llm.flows.model import (
    Chunking,
    CutFault,
    ErrorEventFault,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    StallFault,
    Step,
    ToolCall,
)
from mock_llm.play.response_plan import Pause, ResponsePlan, Send
from mock_llm.wire import openai as openai_wire
from mock_llm.wire.responses import failure_events, response, stream_events

from ....support.cases import check_each
from ...conftest import CALL, FULL, MESSAGES, META, built_in_answers, plan, sent, typed_events

EVENTS = pydantic.TypeAdapter[ResponseStreamEvent](ResponseStreamEvent)


def responses_plan(step: Step, *, stream: bool = True) -> ResponsePlan:
    return plan(step, stream=stream, api="responses")


def parse(raw: bytes) -> list[dict[str, Any]]:
    """The events of a stream, each accepted by the SDK's models."""
    return typed_events(raw, EVENTS)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"].removeprefix("response.") for event in events]


def test_a_full_step_is_the_documented_event_sequence():
    plan = responses_plan(FULL)
    assert dict(plan.headers)["content-type"].startswith("text/event-stream")
    events = parse(sent(plan))
    reasoning, content = split(FULL.reasoning, FULL.chunking), split(FULL.content, FULL.chunking)
    arguments = split(CALL.arguments, FULL.chunking)
    part = ["output_item.added", "content_part.added"]
    end = ["content_part.done", "output_item.done"]
    assert types(events) == [
        "created",
        "in_progress",
        *part,
        *["reasoning_text.delta"] * len(reasoning),
        "reasoning_text.done",
        *end,
        *part,
        *["output_text.delta"] * len(content),
        "output_text.done",
        *end,
        "output_item.added",
        *["function_call_arguments.delta"] * len(arguments),
        "function_call_arguments.done",
        "output_item.done",
        "completed",
    ]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert b"[DONE]" not in sent(plan)


def test_the_deltas_are_the_steps_chunks_and_the_done_events_the_whole():
    step = Step(content="a b c", reasoning="x y", tool_calls=(CALL,), chunking=Chunking("size", 4))
    events = parse(sent(responses_plan(step)))

    def of(kind: str, key: str) -> list[str]:
        return [event[key] for event in events if event["type"] == f"response.{kind}"]

    assert of("reasoning_text.delta", "delta") == split("x y", step.chunking)
    assert of("output_text.delta", "delta") == ["a b ", "c"]
    assert of("function_call_arguments.delta", "delta") == split(CALL.arguments, step.chunking)
    assert of("reasoning_text.done", "text") == ["x y"]
    assert of("output_text.done", "text") == ["a b c"]
    assert of("function_call_arguments.done", "arguments") == [CALL.arguments]


def announced_id(events: list[dict[str, Any]], event: dict[str, Any]) -> str:
    """The id of the item announced at the event's output index."""
    [item] = [
        e["item"]
        for e in events
        if e["type"] == "response.output_item.added" and e["output_index"] == event["output_index"]
    ]
    return item["id"]


def test_items_are_announced_empty_and_finished_whole_with_ids_from_the_completion():
    events = parse(sent(responses_plan(FULL)))
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [(i["id"], i["type"], i["status"]) for i in added] == [
        ("rs_mock7_0", "reasoning", "in_progress"),
        ("msg_mock7_1", "message", "in_progress"),
        ("fc_mock7_2", "function_call", "in_progress"),
    ]
    assert added[0]["content"] == added[1]["content"] == []
    assert (added[2]["call_id"], added[2]["name"], added[2]["arguments"]) == (
        "call_mock7_0",
        "read",
        "",
    )
    assert done == response(FULL, META, MESSAGES)["output"]
    assert {e["response"]["id"] for e in events if "response" in e} == {"resp_mock7"}
    assert all(e["item_id"] == announced_id(events, e) for e in events if "item_id" in e)


def test_the_last_event_carries_the_whole_response_with_usage():
    events = parse(sent(responses_plan(FULL)))
    whole = json.loads(sent(responses_plan(FULL, stream=False)))
    Response.model_validate(whole)
    assert events[-1]["response"] == whole
    assert (whole["object"], whole["status"], whole["model"]) == (
        "response",
        "completed",
        "lfm2-test",
    )
    assert whole["incomplete_details"] is None
    usage = openai_wire.usage(FULL, MESSAGES)
    assert whole["usage"] == {
        "input_tokens": usage["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage["completion_tokens"],
        "output_tokens_details": {
            "reasoning_tokens": usage["completion_tokens_details"]["reasoning_tokens"]
        },
        "total_tokens": usage["total_tokens"],
    }
    opening = events[0]["response"]
    assert (opening["status"], opening["output"], opening["usage"]) == ("in_progress", [], None)


@pytest.mark.parametrize(
    ("finish", "reason"), [("length", "max_output_tokens"), ("content_filter", "content_filter")]
)
def test_a_response_cut_short_ends_incomplete(finish: Any, reason: str):
    step = Step(content="Backups run nightly at", finish_reason=finish)
    events = parse(sent(responses_plan(step)))
    assert events[-1]["type"] == "response.incomplete"
    final = events[-1]["response"]
    assert (final["status"], final["incomplete_details"]) == ("incomplete", {"reason": reason})
    assert final["output"][-1]["status"] == "incomplete"
    assert json.loads(sent(responses_plan(step, stream=False))) == final


def test_a_tool_call_only_step_has_no_message_item():
    step = Step(tool_calls=(CALL, ToolCall("list", "{}", id="call_given")))
    output = response(step, META, MESSAGES)["output"]
    assert [(i["type"], i["call_id"]) for i in output] == [
        ("function_call", "call_mock7_0"),
        ("function_call", "call_given"),
    ]


def test_an_empty_step_still_answers_with_an_empty_message():
    events = parse(sent(responses_plan(Step())))
    assert "response.output_text.delta" not in [e["type"] for e in events]
    [message] = events[-1]["response"]["output"]
    assert message["content"][0]["text"] == ""


def test_time_to_first_token_comes_before_the_first_item_and_delay_between_deltas():
    step = Step(content="a b c", ttft_ms=200, delay_ms=50)
    frames = stream_events(step, META, MESSAGES)
    kinds = [json.loads(data.split(b"\ndata: ")[1])["type"] for _, data in frames]
    pauses = dict(zip(range(len(frames)), [pause for pause, _ in frames], strict=True))
    assert kinds[2] == "response.output_item.added"
    assert pauses[2] == 0.2
    deltas = [i for i, kind in enumerate(kinds) if kind.endswith(".delta")]
    assert [pauses[i] for i in deltas] == [0.0, 0.05, 0.05]
    assert sum(pauses.values()) == pytest.approx(0.3)
    plan = responses_plan(step)
    assert [a.seconds for a in plan.actions if isinstance(a, Pause)] == [0.2, 0.05, 0.05]


def test_a_recorded_step_streams_its_recorded_chunks_after_their_gaps():
    recorded = (
        RecordedChunk("content", "Hel", after_ms=100),
        RecordedChunk("content", "lo", after_ms=20),
        RecordedChunk("call", "", call=0, after_ms=5),  # the opening: id and name, no text
        RecordedChunk("call", '{"a": 1}', call=0, after_ms=7),
    )
    step = Step(content="Hello", tool_calls=(ToolCall("read", '{"a": 1}'),), recorded=recorded)
    frames = stream_events(step, META, MESSAGES)
    timed = [
        (json.loads(data.split(b"\ndata: ")[1])["type"].removeprefix("response."), pause)
        for pause, data in frames
    ]
    assert [(kind, pause) for kind, pause in timed if pause] == [
        ("output_item.added", 0.1),  # the message, when its first chunk is due
        ("output_text.delta", 0.02),
        ("output_item.added", 0.005),  # the call, at its opening
        ("function_call_arguments.delta", 0.007),
    ]
    events = parse(b"".join(data for _, data in frames))
    text = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    arguments = [
        e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
    ]
    assert (text, arguments) == (["Hel", "lo"], ['{"a": 1}'])


def test_every_built_in_flow_plays_as_events_the_sdk_accepts_saying_what_the_step_says():
    """Every answering step of every built-in flow, streamed and whole, read with the SDK's
    models: its text, reasoning, calls and finish (over HTTP, with the SDK's client:
    tests/integration/mock_llm/test_responses_api.py)."""

    def check(step: Step) -> None:
        events = parse(sent(responses_plan(step)))
        whole = Response.model_validate(json.loads(sent(responses_plan(step, stream=False))))
        if step.extract is not None:  # its text is made from the request's messages
            return
        cut_short = step.resolved_finish_reason == "length"
        calls = [(c.name, c.arguments) for c in step.tool_calls]

        def deltas(kind: str) -> str:
            return "".join(e["delta"] for e in events if e["type"] == f"response.{kind}.delta")

        assert (deltas("output_text"), deltas("reasoning_text")) == (step.content, step.reasoning)
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] == ("response.incomplete" if cut_short else "response.completed")
        items = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        assert [(i["name"], i["arguments"]) for i in items if i["type"] == "function_call"] == calls
        assert whole.output_text == step.content
        assert [(i.name, i.arguments) for i in whole.output if i.type == "function_call"] == calls
        assert whole.status == ("incomplete" if cut_short else "completed")

    steps = built_in_answers()
    assert check_each(steps, check) == len(steps) > 0


# --- faults -----------------------------------------------------------------------------------


def test_an_http_fault_is_the_openai_error_body_with_its_status_and_retry_after():
    fault = HttpFault(status=429, message="Slow down.", type="rate_limit_exceeded", retry_after=1)
    plan = responses_plan(Step(fault=fault))
    assert (plan.status, dict(plan.headers)["retry-after"]) == (429, "1")
    error = {"message": "Slow down.", "type": "rate_limit_exceeded", "param": None, "code": None}
    assert json.loads(sent(plan)) == {"error": error}


def test_an_error_event_is_an_error_then_response_failed_and_the_end():
    fault = ErrorEventFault(after_chunks=3, message="Crashed.")
    plan = responses_plan(Step(content="a b c", fault=fault))
    events = parse(sent(plan))
    assert types(events) == ["created", "in_progress", "output_item.added", "error", "failed"]
    assert events[3] == {
        "type": "error",
        "code": "server_error",
        "message": "Crashed.",
        "param": None,
        "sequence_number": 3,
    }
    failed = events[4]["response"]
    assert (failed["id"], failed["status"], events[4]["sequence_number"]) == (
        "resp_mock7",
        "failed",
        4,
    )
    assert (failed["error"]["code"], failed["error"]["message"]) == ("server_error", "Crashed.")
    assert plan.ending == "eof"


def test_an_error_event_after_the_last_event_is_numbered_after_it():
    step = Step(content="a", fault=ErrorEventFault(after_chunks=99, message="No.", code="e1"))
    events = parse(sent(responses_plan(step)))
    assert types(events)[-3:] == ["completed", "error", "failed"]
    assert events[-2]["code"] == "e1"
    assert events[-1]["response"]["error"]["code"] == "server_error"  # the API's list is closed
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_a_malformed_line_is_a_bare_data_line_and_the_stream_goes_on():
    plan = responses_plan(Step(content="a b c", fault=MalformedFault(after_chunks=2)))
    blocks = sent(plan).split(b"\n\n")
    assert blocks[2] == b"data: {this is not json"
    good = b"\n\n".join(blocks[:2] + blocks[3:])
    assert parse(good)[-1]["type"] == "response.completed"
    assert plan.ending == "complete"


def test_a_cut_ends_after_that_many_events_and_counts_them():
    plan = responses_plan(Step(content="a b c d e f", fault=CutFault(after_chunks=6, mode="abort")))
    assert plan.ending == "abort"
    assert sum(a.chunks for a in plan.actions if isinstance(a, Send)) == 6
    assert types(parse(sent(plan)))[-2:] == ["output_text.delta", "output_text.delta"]


def test_a_stall_pauses_mid_stream_then_finishes():
    plan = responses_plan(Step(content="a b", fault=StallFault(after_chunks=2, seconds=4)))
    assert Pause(4) in plan.actions
    assert parse(sent(plan))[-1]["type"] == "response.completed"


def test_whole_answer_faults_map_as_in_the_other_formats():
    error = responses_plan(
        Step(content="x", fault=ErrorEventFault(after_chunks=0, message="No.")), stream=False
    )
    assert (error.status, json.loads(sent(error))["error"]["message"]) == (500, "No.")
    cut = responses_plan(Step(content="x y z", fault=CutFault(after_chunks=1)), stream=False)
    assert cut.ending == "abort"
    assert int(dict(cut.headers)["content-length"]) > len(sent(cut))
    malformed = responses_plan(
        Step(content="x", fault=MalformedFault(after_chunks=1)), stream=False
    )
    assert sent(malformed) == b"{this is not json"


def test_failure_events_alone_are_two_numbered_events():
    raw = failure_events(ErrorEventFault(after_chunks=0, message="Down."), META, 5)
    assert [(e["type"], e["sequence_number"]) for e in parse(raw)] == [
        ("error", 5),
        ("response.failed", 6),
    ]
