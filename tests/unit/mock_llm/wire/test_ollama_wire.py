"""mock_llm.wire.ollama and the Ollama side of response_plan: lines, whole answers, faults."""

from __future__ import annotations

import json

import ollama

from mock_llm.flows.model import ErrorEventFault, HttpFault, MalformedFault, Step, ToolCall
from mock_llm.play.response_plan import RequestShape, ResponsePlan, plan_response
from mock_llm.wire.ollama import chat_lines, chat_response, tool_calls

from ....support.cases import check_each
from ...conftest import MESSAGES, META, built_in_answers, sent


def ollama_plan(step: Step, *, stream: bool = True) -> ResponsePlan:
    shape = RequestShape(stream=stream, include_usage=False, messages=MESSAGES, api="ollama")
    return plan_response(step, META, "reasoning_content", shape)


def test_a_stream_is_ndjson_lines_ending_in_one_done_line():
    step = Step(content="Backups run nightly.", reasoning="They ask about backups.")
    plan = ollama_plan(step)
    assert dict(plan.headers)["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in sent(plan).decode().splitlines()]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert "".join(line["message"].get("thinking", "") for line in lines) == step.reasoning
    assert "".join(line["message"]["content"] for line in lines) == step.content
    assert lines[-1]["done_reason"] == "stop"
    assert b"[DONE]" not in sent(plan)


def test_the_stream_and_the_whole_answer_say_the_same():
    call = ToolCall("read", '{"path": "/homelab/backups.md"}')
    step = Step(content="Reading.", reasoning="Look it up.", tool_calls=(call,))
    lines = [json.loads(data) for _, data in chat_lines(step, META, MESSAGES)]
    whole = chat_response(step, META, MESSAGES)
    assert "".join(line["message"]["content"] for line in lines) == whole["message"]["content"]
    streamed_calls = [c for line in lines for c in line["message"].get("tool_calls", [])]
    assert streamed_calls == whole["message"]["tool_calls"]
    assert {k: v for k, v in lines[-1].items() if k != "message"} == {
        k: v for k, v in whole.items() if k != "message"
    }


def test_every_built_in_flow_streams_and_answers_whole_alike_as_the_client_reads_it():
    """Every answering step of every built-in flow, read with the ollama client's own
    models: the stream's text, thinking, tool calls, finish and counts are the whole
    answer's and the step's (over HTTP: tests/integration/mock_llm/test_ollama_api.py)."""

    def check(step: Step) -> None:
        lines = [
            ollama.ChatResponse.model_validate_json(line)
            for line in sent(ollama_plan(step)).splitlines()
        ]
        whole = ollama.ChatResponse.model_validate_json(sent(ollama_plan(step, stream=False)))
        if step.extract is not None:  # its text is made from the request's messages
            return
        calls = [
            (c.function.name, dict(c.function.arguments)) for c in whole.message.tool_calls or []
        ]
        streamed_calls = [
            (c.function.name, dict(c.function.arguments))
            for line in lines
            for c in line.message.tool_calls or []
        ]
        expected_calls = [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
        assert "".join(line.message.content or "" for line in lines) == whole.message.content
        assert whole.message.content == step.content
        assert "".join(line.message.thinking or "" for line in lines) == step.reasoning
        assert (whole.message.thinking or "") == step.reasoning
        assert streamed_calls == calls == expected_calls
        assert [line.done for line in lines] == [False] * (len(lines) - 1) + [True]
        reason = "length" if step.resolved_finish_reason == "length" else "stop"
        assert lines[-1].done_reason == whole.done_reason == reason
        assert lines[-1].eval_count == whole.eval_count
        assert (whole.eval_count or 0) > 0

    steps = built_in_answers()
    assert check_each(steps, check) == len(steps) > 0


def test_tool_call_arguments_go_as_an_object_and_bad_ones_as_an_empty_one():
    step = Step(tool_calls=(ToolCall("read", '{"path": "/x.md"}'), ToolCall("list", "not json")))
    assert tool_calls(step) == [
        {"function": {"name": "read", "arguments": {"path": "/x.md"}}},
        {"function": {"name": "list", "arguments": {}}},
    ]


def test_an_http_fault_is_ollamas_error_body():
    fault = HttpFault(status=503, message="Overloaded.", type="server_error")
    plan = ollama_plan(Step(fault=fault))
    assert plan.status == 503
    assert json.loads(sent(plan)) == {"error": "Overloaded."}


def test_an_error_event_is_an_error_line_that_ends_the_stream():
    plan = ollama_plan(
        Step(content="a b c", fault=ErrorEventFault(after_chunks=1, message="Crashed."))
    )
    last = sent(plan).decode().splitlines()[-1]
    assert json.loads(last) == {"error": "Crashed."}
    assert plan.ending == "eof"


def test_a_malformed_line_is_a_bare_line():
    plan = ollama_plan(Step(content="a b c", fault=MalformedFault(after_chunks=1)))
    assert "{this is not json" in sent(plan).decode().splitlines()


def test_a_whole_error_event_is_a_500_with_ollamas_error_body():
    plan = ollama_plan(
        Step(content="x", fault=ErrorEventFault(after_chunks=0, message="No.")), stream=False
    )
    assert (plan.status, json.loads(sent(plan))) == (500, {"error": "No."})
