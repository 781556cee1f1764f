"""mock_llm.wire.gemini and the Gemini side of response_plan: SSE events, the JSON-array
framing, whole answers, pauses, faults. Every chunk and every answer is also validated
against the official google-genai client's own model (`GenerateContentResponse`), which
refuses a field it does not know."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types
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
from mock_llm.play.response_plan import Pause, RequestShape, ResponsePlan, plan_response
from mock_llm.wire import gemini as gemini_wire
from mock_llm.wire import openai as openai_wire

from ....support.cases import check_each
from ...conftest import CALL, FULL, MESSAGES, META, built_in_answers, sent

FRAMINGS = [False, True]
FRAMING_IDS = ["sse", "json-array"]


def gemini_plan(step: Step, *, stream: bool = True, json_array: bool = False) -> ResponsePlan:
    shape = RequestShape(stream, False, MESSAGES, (), "gemini", json_array)
    return plan_response(step, META, "reasoning_content", shape)


def sse_chunks(raw: bytes) -> list[dict[str, Any]]:
    """The events of an SSE stream: each is one `data:` line ended by a CRLF blank line."""
    text = raw.decode()
    assert text.endswith("\r\n\r\n")
    events = text[: -len("\r\n\r\n")].split("\r\n\r\n")
    assert all(event.startswith("data: ") and "\n" not in event for event in events)
    return [json.loads(event.removeprefix("data: ")) for event in events]


def array_chunks(raw: bytes) -> list[dict[str, Any]]:
    """The elements of a whole JSON-array stream."""
    text = raw.decode()
    assert text.startswith("[{")
    assert text.endswith("}\r\n]")
    return json.loads(text)


def chunks(step: Step, json_array: bool = False) -> list[dict[str, Any]]:
    raw = sent(gemini_plan(step, json_array=json_array))
    return array_chunks(raw) if json_array else sse_chunks(raw)


def parts(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    return chunk["candidates"][0]["content"].get("parts", [])


def joined(elements: list[dict[str, Any]], thought: bool) -> str:
    return "".join(
        part["text"]
        for chunk in elements
        for part in parts(chunk)
        if "text" in part and part.get("thought", False) == thought
    )


def calls(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        part["functionCall"]
        for chunk in elements
        for part in parts(chunk)
        if "functionCall" in part
    ]


def test_an_sse_stream_is_data_events_with_crlf_line_ends_and_no_end_marker():
    plan = gemini_plan(FULL)
    assert dict(plan.headers)["content-type"].startswith("text/event-stream")
    assert plan.headers_first
    raw = sent(plan)
    assert len(sse_chunks(raw)) == raw.count(b"data: ")
    assert b"[DONE]" not in raw


def test_the_json_array_framing_is_one_array_written_element_by_element():
    plan = gemini_plan(FULL, json_array=True)
    assert dict(plan.headers)["content-type"] == "application/json"
    frames = gemini_wire.stream_frames(FULL, META, MESSAGES, json_array=True)
    assert frames[0][1].startswith(b"[{")
    assert all(data.startswith(b"\r\n,\r\n{") for _, data in frames[1:])
    assert sent(plan) == b"".join(data for _, data in frames) + b"\r\n]"


def test_json_array_elements_are_indented_over_several_lines_as_googles_are():
    [first, *_] = gemini_wire.stream_frames(FULL, META, MESSAGES, json_array=True)
    assert first[1].startswith(b'[{\n  "candidates": [\n    {\n')


@pytest.mark.parametrize("json_array", FRAMINGS, ids=FRAMING_IDS)
def test_both_framings_carry_the_same_chunks(json_array: bool):
    assert chunks(FULL, json_array) == chunks(FULL)


@pytest.mark.parametrize("json_array", FRAMINGS, ids=FRAMING_IDS)
def test_every_built_in_flow_plays_as_chunks_the_sdk_accepts_saying_what_the_step_says(
    json_array: bool,
):
    """Every answering step of every built-in flow, streamed and whole, each chunk accepted
    by the client's model: its text, thoughts, calls and finish (over HTTP, with the
    client: tests/integration/mock_llm/test_gemini_api.py)."""

    def check(step: Step) -> None:
        elements = chunks(step, json_array)
        for chunk in elements:
            types.GenerateContentResponse.model_validate(chunk)
        whole = json.loads(sent(gemini_plan(step, stream=False)))
        types.GenerateContentResponse.model_validate(whole)
        if step.extract is not None:  # its text is made from the request's messages
            return
        said = [(c["name"], c.get("args", {})) for c in calls(elements)]
        assert (joined(elements, False), joined(elements, True)) == (step.content, step.reasoning)
        assert (joined([whole], False), joined([whole], True)) == (step.content, step.reasoning)
        assert said == [(c["name"], c.get("args", {})) for c in calls([whole])]
        assert said == [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
        finish = "MAX_TOKENS" if step.resolved_finish_reason == "length" else "STOP"
        finishes = [chunk["candidates"][0].get("finishReason") for chunk in elements]
        assert finishes == [None] * (len(elements) - 1) + [finish]
        assert whole["candidates"][0]["finishReason"] == finish

    steps = built_in_answers()
    assert check_each(steps, check) == len(steps) > 0


def test_thoughts_then_text_piece_by_piece_then_the_calls_whole_then_the_finish():
    step = Step(content="a b", reasoning="x y", tool_calls=(CALL, ToolCall("list", "{}")))
    elements = chunks(step)
    assert [parts(chunk) for chunk in elements] == [
        [{"text": "x", "thought": True}],
        [{"text": " y", "thought": True}],
        [{"text": "a"}],
        [{"text": " b"}],
        [
            {"functionCall": {"name": "read", "args": {"path": "/homelab/backups.md"}}},
            {"functionCall": {"name": "list", "args": {}}},
        ],
        [],
    ]
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in elements)
    assert [c["candidates"][0].get("finishReason") for c in elements] == [None] * 5 + ["STOP"]


def test_the_deltas_are_the_steps_chunks():
    step = Step(content="a b c", reasoning="x y", chunking=Chunking("size", 2))
    elements = chunks(step)
    texts = [part["text"] for chunk in elements for part in parts(chunk) if not part.get("thought")]
    thoughts = [part["text"] for chunk in elements for part in parts(chunk) if part.get("thought")]
    assert (texts, thoughts) == (split("a b c", step.chunking), split("x y", step.chunking))


def test_the_stream_and_the_whole_answer_say_the_same():
    elements = chunks(FULL)
    whole = json.loads(sent(gemini_plan(FULL, stream=False)))
    assert parts(whole) == [
        {"text": FULL.reasoning, "thought": True},
        {"text": FULL.content},
        {"functionCall": {"name": "read", "args": {"path": "/homelab/backups.md"}}},
    ]
    assert joined(elements, thought=False) == FULL.content
    assert joined(elements, thought=True) == FULL.reasoning
    assert calls(elements) == calls([whole])
    last = elements[-1]
    assert last["usageMetadata"] == whole["usageMetadata"]
    assert last["candidates"][0]["finishReason"] == whole["candidates"][0]["finishReason"]


def test_the_last_chunk_carries_the_whole_usage_and_the_others_the_prompts_count():
    elements = chunks(FULL)
    prompt = openai_wire.usage(FULL, MESSAGES)["prompt_tokens"]
    assert all(
        c["usageMetadata"] == {"promptTokenCount": prompt, "totalTokenCount": prompt}
        for c in elements[:-1]
    )
    assert elements[-1]["usageMetadata"] == gemini_wire.usage_metadata(FULL, MESSAGES)


def test_usage_counts_thoughts_apart_from_the_answer():
    counts = openai_wire.usage(FULL, MESSAGES)
    thoughts = counts["completion_tokens_details"]["reasoning_tokens"]
    assert gemini_wire.usage_metadata(FULL, MESSAGES) == {
        "promptTokenCount": counts["prompt_tokens"],
        "candidatesTokenCount": counts["completion_tokens"] - thoughts,
        "totalTokenCount": counts["total_tokens"],
        "thoughtsTokenCount": thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": counts["prompt_tokens"]}],
    }


def test_counts_of_zero_are_left_out_of_the_usage():
    assert gemini_wire.usage_metadata(Step(content="hi"), []) == {
        "candidatesTokenCount": 1,
        "totalTokenCount": 1,
    }


@pytest.mark.parametrize(
    ("finish", "reason"),
    [
        ("stop", "STOP"),
        ("tool_calls", "STOP"),
        ("length", "MAX_TOKENS"),
        ("content_filter", "SAFETY"),
    ],
)
def test_each_finish_reason_is_geminis(finish: FinishReason, reason: str):
    step = Step(content="Backups run nightly at", finish_reason=finish)
    assert chunks(step)[-1]["candidates"][0]["finishReason"] == reason
    whole = json.loads(sent(gemini_plan(step, stream=False)))
    assert whole["candidates"][0]["finishReason"] == reason


def test_tool_call_arguments_go_as_an_object_and_bad_ones_as_an_empty_one():
    assert gemini_wire.function_call(ToolCall("list", "not json")) == {
        "functionCall": {"name": "list", "args": {}}
    }
    assert gemini_wire.function_call(ToolCall("list", "[1]")) == {
        "functionCall": {"name": "list", "args": {}}
    }


def test_a_call_carries_an_id_only_when_the_flow_gives_it_one():
    assert "id" not in gemini_wire.function_call(CALL)["functionCall"]
    given_id = ToolCall("read", "{}", id="call_given")
    assert gemini_wire.function_call(given_id)["functionCall"]["id"] == "call_given"


def test_a_tool_call_only_step_has_no_text_part():
    whole = json.loads(sent(gemini_plan(Step(tool_calls=(CALL,)), stream=False)))
    assert [list(part) for part in parts(whole)] == [["functionCall"]]


def test_an_empty_step_streams_only_its_finish_and_answers_with_an_empty_text():
    assert [parts(chunk) for chunk in chunks(Step())] == [[]]
    assert parts(json.loads(sent(gemini_plan(Step(), stream=False)))) == [{"text": ""}]


def test_the_model_and_the_response_id_come_from_the_completion():
    for chunk in [*chunks(FULL), json.loads(sent(gemini_plan(FULL, stream=False)))]:
        assert (chunk["modelVersion"], chunk["responseId"]) == (META.model, "mock7")


def test_time_to_first_token_comes_before_the_first_chunk_and_delay_between_chunks():
    step = Step(content="a b c", reasoning="r", ttft_ms=200, delay_ms=50, tool_calls=(CALL,))
    pauses = [pause for pause, _ in gemini_wire.stream_frames(step, META, MESSAGES, False)]
    assert pauses == [0.2, 0.05, 0.05, 0.05, 0.05, 0.0]  # r, a, b, c, the calls, the finish
    assert [a.seconds for a in gemini_plan(step).actions if isinstance(a, Pause)] == pauses[:-1]


def test_an_empty_step_waits_its_time_to_first_token_before_the_finish():
    [(pause, _)] = gemini_wire.stream_frames(Step(ttft_ms=80), META, MESSAGES, False)
    assert pause == 0.08


def test_a_recorded_step_streams_its_pieces_after_their_gaps_and_the_calls_after_theirs():
    recorded = (
        RecordedChunk("reasoning", "hm", after_ms=100),
        RecordedChunk("content", "Hel", after_ms=20),
        RecordedChunk("content", "lo", after_ms=10),
        RecordedChunk("call", "", call=0, after_ms=5),
        RecordedChunk("call", '{"a": 1}', call=0, after_ms=7),
    )
    step = Step(
        content="Hello",
        reasoning="hm",
        tool_calls=(ToolCall("read", '{"a": 1}'),),
        recorded=recorded,
    )
    frames = gemini_wire.stream_frames(step, META, MESSAGES, False)
    assert [pause for pause, _ in frames] == [0.1, 0.02, 0.01, pytest.approx(0.012), 0.0]
    elements = sse_chunks(b"".join(data for _, data in frames))
    assert [parts(c) for c in elements[:3]] == [
        [{"text": "hm", "thought": True}],
        [{"text": "Hel"}],
        [{"text": "lo"}],
    ]
    assert calls(elements) == [{"name": "read", "args": {"a": 1}}]


@given(
    content=st.text(max_size=20),
    reasoning=st.text(max_size=20),
    arguments=st.lists(st.sampled_from(['{"path": "/a"}', "{}", "nope"]), max_size=2),
    chunking=st.sampled_from([Chunking("whole"), Chunking("char"), Chunking("word")]),
    json_array=st.booleans(),
)
def test_any_stream_joins_back_to_the_whole_answer(
    content: str, reasoning: str, arguments: list[str], chunking: Chunking, json_array: bool
):
    step = Step(
        content=content,
        reasoning=reasoning,
        tool_calls=tuple(ToolCall("read", a) for a in arguments),
        chunking=chunking,
    )
    elements = chunks(step, json_array)
    whole = json.loads(sent(gemini_plan(step, stream=False)))
    assert joined(elements, thought=False) == joined([whole], thought=False) == content
    assert joined(elements, thought=True) == joined([whole], thought=True) == reasoning
    assert calls(elements) == calls([whole])
    assert elements[-1]["usageMetadata"] == whole["usageMetadata"]


# --- errors and faults ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (400, "INVALID_ARGUMENT"),
        (401, "UNAUTHENTICATED"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
        (413, "INVALID_ARGUMENT"),
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (503, "UNAVAILABLE"),
        (504, "DEADLINE_EXCEEDED"),
        (418, "UNKNOWN"),
        (599, "UNKNOWN"),
    ],
)
def test_an_http_fault_is_googles_error_body_with_the_status_google_names(status: int, name: str):
    plan = gemini_plan(Step(fault=HttpFault(status, "No.", "server_error")))
    assert plan.status == status
    assert json.loads(sent(plan)) == {"error": {"code": status, "message": "No.", "status": name}}


def test_a_rate_limit_says_when_to_retry_in_a_header_and_in_a_retry_info():
    fault = HttpFault(429, "Slow down.", "rate_limit_exceeded", retry_after=1.5)
    plan = gemini_plan(Step(fault=fault), stream=False)
    assert dict(plan.headers)["retry-after"] == "1.5"
    [detail] = json.loads(sent(plan))["error"]["details"]
    assert detail == {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1, "1s"), (0, "0s"), (0.25, "0.25s"), (37.5, "37.5s"), (1e-9, "0.000000001s")],
)
def test_a_delay_is_written_as_a_protobuf_duration(seconds: float, text: str):
    assert gemini_wire.duration(seconds) == text


def test_a_refusal_names_its_field_in_a_bad_request_detail():
    body = gemini_wire.error_body(400, "Bad role.", field="contents[0].role")
    assert body["error"]["details"] == [
        {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": "contents[0].role", "description": "Bad role."}],
        }
    ]


def test_an_error_event_is_an_error_chunk_that_ends_the_sse_stream():
    plan = gemini_plan(Step(content="a b c d", fault=ErrorEventFault(2, "Crashed.")))
    elements = sse_chunks(sent(plan))
    assert elements[-1] == {"error": {"code": 500, "message": "Crashed.", "status": "INTERNAL"}}
    assert len(elements) == 3
    assert plan.ending == "eof"


@pytest.mark.parametrize("after", [0, 2])
def test_an_error_event_is_the_last_element_and_closes_the_array(after: int):
    plan = gemini_plan(
        Step(content="a b c d", fault=ErrorEventFault(after, "Crashed.")), json_array=True
    )
    elements = array_chunks(sent(plan))
    assert len(elements) == after + 1
    assert elements[-1]["error"]["message"] == "Crashed."


def test_a_whole_error_event_is_a_500_with_googles_error_body():
    plan = gemini_plan(Step(content="x", fault=ErrorEventFault(0, "No.")), stream=False)
    assert plan.status == 500
    assert json.loads(sent(plan)) == {
        "error": {"code": 500, "message": "No.", "status": "INTERNAL"}
    }


def test_a_malformed_line_is_a_bare_data_event_and_the_sse_stream_carries_on():
    plan = gemini_plan(Step(content="a b c", fault=MalformedFault(2)))
    events = sent(plan).decode().split("\r\n\r\n")
    assert events[2] == "data: {this is not json"
    assert json.loads(events[3].removeprefix("data: "))["candidates"]
    assert plan.ending == "complete"


def test_a_malformed_line_in_the_array_is_a_line_of_its_own_between_elements():
    plan = gemini_plan(Step(content="a b c", fault=MalformedFault(2)), json_array=True)
    raw = sent(plan)
    assert b"}\r\n{this is not json\r\n\r\n,\r\n{" in raw
    assert raw.endswith(b"\r\n]")
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)


@pytest.mark.parametrize("json_array", FRAMINGS, ids=FRAMING_IDS)
def test_a_clean_eof_ends_with_no_finish_and_no_closing_bracket(json_array: bool):
    plan = gemini_plan(Step(content="a b c d", fault=CutFault(2, "eof")), json_array=json_array)
    raw = sent(plan)
    assert plan.ending == "eof"
    assert b"finishReason" not in raw
    assert not raw.endswith(b"]")
    assert raw.count(b"candidates") == 2


def test_an_abort_leaves_the_body_unfinished():
    plan = gemini_plan(Step(content="a b c d", fault=CutFault(2, "abort")), json_array=True)
    assert (plan.ending, sent(plan).count(b"candidates")) == ("abort", 2)


def test_a_stall_pauses_the_stream_then_it_carries_on_whole():
    plan = gemini_plan(Step(content="a b c d", fault=StallFault(2, 0.3)), json_array=True)
    assert Pause(0.3) in plan.actions
    assert joined(array_chunks(sent(plan)), thought=False) == "a b c d"
