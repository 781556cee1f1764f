"""Recorded steps (`chunks:`): the schema, and how they replay in every wire format, with
their recorded gaps scaled by the replay pacing."""

from __future__ import annotations

import json
import textwrap

import pytest

from mock_llm.flows.catalog import step_to_json
from mock_llm.flows.chunking import (
    NO_PACING,
    REAL_PACING,
    answer_delay_s,
    gap_s,
    paced,
    parse_pacing,
    pieces,
    ttft_s,
)
from mock_llm.flows.flow_file import FlowFileError, parse_flows
from mock_llm.flows.model import Chunking, CutFault, HttpFault, RecordedChunk, Step, ToolCall
from mock_llm.play.response_plan import FaultFired, Pause, RequestShape, Send, plan_response
from mock_llm.wire.ollama import chat_lines

from ...conftest import MESSAGES, META, plan, sent_chunks, sent_events

RECORDED = """
flows:
  rec:
    steps:
      - reasoning: Think.
        content: Hello world
        tool_calls:
          - {name: read, id: call_x, arguments: '{"path": "a"}'}
        finish_reason: tool_calls
        chunks:
          - {reasoning: Thi, after_ms: 100}
          - {reasoning: nk.}
          - {content: Hello, after_ms: 20.5}
          - {content: " world", after_ms: 30}
          - {call: 0, arguments: "", after_ms: 5}
          - {call: 0, arguments: '{"path": ', after_ms: 5}
          - {call: 0, arguments: '"a"}'}
"""


def recorded_step() -> Step:
    return parse_flows(RECORDED, "rec.yaml")["rec"].steps[0]


def parse_step(step_yaml: str) -> Step:
    text = (
        "flows:\n  f:\n    steps:\n      - "
        + textwrap.indent(textwrap.dedent(step_yaml).strip(), "        ").lstrip()
    )
    return parse_flows(text, "flows.yaml")["f"].steps[0]


def deltas(step: Step, **kwargs: object) -> list[dict[str, object]]:
    return [c["choices"][0]["delta"] for c in sent_chunks(plan(step, **kwargs))]  # type: ignore[arg-type]


# --- the schema ---------------------------------------------------------------------------


def test_chunks_parse_into_recorded_chunks_and_texts_are_their_joins():
    step = recorded_step()
    assert step.recorded[:3] == (
        RecordedChunk("reasoning", "Thi", None, 100.0),
        RecordedChunk("reasoning", "nk.", None, 0.0),
        RecordedChunk("content", "Hello", None, 20.5),
    )
    assert step.recorded[-1] == RecordedChunk("call", '"a"}', 0, 0.0)
    assert (step.reasoning, step.content) == ("Think.", "Hello world")
    assert step.tool_calls == (ToolCall("read", '{"path": "a"}', "call_x"),)
    hash(step)  # a step stays hashable (plans cache on it)


def test_texts_left_out_are_the_joins_of_the_chunks():
    step = parse_step(
        """
        tool_calls: [{name: read}]
        chunks:
          - {content: "a\\nb"}
          - {content: " c"}
          - {call: 0, arguments: "{}"}
        """
    )
    assert step.content == "a\nb c"
    assert step.tool_calls == (ToolCall("read", "{}"),)


BAD_STEPS = [
    ("chunks: []", "'chunks' must be a non-empty list"),
    ("chunks: {content: a}", "'chunks' must be a non-empty list"),
    ("chunks:\n  - content: a\n    reasoning: b", "a chunk is one of"),
    ("chunks:\n  - {after_ms: 3}", "a chunk is one of"),
    ("chunks:\n  - {content: a, after_ms: -1}", "'after_ms' must be a finite number >= 0"),
    ("chunks:\n  - {content: a, arguments: b}", "'arguments' goes with 'call'"),
    ("chunks:\n  - {call: 0}", "a 'call' chunk needs 'arguments'"),
    ("chunks:\n  - {content: 5}", "'content' must be a string"),
    ("chunks:\n  - {call: 0, arguments: x}", "'call' is 0 but the step has no tool_calls"),
    ("chunks:\n  - {contnet: a}", "unknown key 'contnet'"),
    (
        "tool_calls: [{name: a}]\nchunks:\n  - {call: 1, arguments: x}",
        "'call' is 1 but the step has 1 tool calls (0 to 0)",
    ),
    (
        "tool_calls: [{name: a}, {name: b}]\nchunks:\n  - {call: 1, arguments: x}",
        "tool call 1 has no chunk",
    ),
    ("chunks:\n  - {content: a}\n  - {reasoning: b}", "a reasoning chunk cannot follow"),
    (
        "tool_calls: [{name: a}, {name: b}]\nchunks:\n  - {call: 1, arguments: x}\n"
        "  - {call: 0, arguments: y}",
        "a chunk of tool call 0 cannot follow a chunk of tool call 1",
    ),
    (
        "tool_calls: [{name: a}]\nchunks:\n  - {call: 0, arguments: x}\n  - {content: y}",
        "a content chunk cannot follow a chunk of tool call 0",
    ),
    ("content: ab\nchunks:\n  - {content: a}", "'content' must be the join of its chunks"),
    ("reasoning: ab\nchunks:\n  - {reasoning: a}", "'reasoning' must be the join"),
    (
        "tool_calls: [{name: a, arguments: '{}'}]\nchunks:\n  - {call: 0, arguments: x}",
        "'arguments' must be the join of its chunks",
    ),
    ("chunking: char\nchunks:\n  - {content: a}", "'chunking' cannot go with 'chunks'"),
    ("delay_ms: 5\nchunks:\n  - {content: a}", "'delay_ms' cannot go with 'chunks'"),
    ("ttft_ms: 5\nchunks:\n  - {content: a}", "'ttft_ms' cannot go with 'chunks'"),
    ("extract: true\nchunks:\n  - {content: a}", "'extract' cannot go with 'chunks'"),
    ("tool_calls: [{name: a}]", "is missing 'arguments'"),
]


@pytest.mark.parametrize(("step_yaml", "problem"), BAD_STEPS)
def test_a_bad_recorded_step_is_an_error_naming_its_line(step_yaml: str, problem: str):
    with pytest.raises(FlowFileError) as caught:
        parse_step(step_yaml)
    assert problem in caught.value.problem
    assert (caught.value.line or 0) >= 4


def test_an_error_names_the_line_of_the_offending_chunk():
    text = (
        "flows:\n  f:\n    steps:\n      - chunks:\n          - {content: a}\n"
        "          - {reasoning: b}\n"
    )
    with pytest.raises(FlowFileError) as caught:
        parse_flows(text, "f.yaml")
    assert caught.value.line == 6
    assert "f.yaml:6: flow 'f' step 1 chunk 2" in str(caught.value)


def test_retry_after_null_means_no_retry_after_header():
    fault = parse_step("fault: {kind: http, status: 429, retry_after: null}").fault
    assert fault == HttpFault(
        429, "Rate limit reached (mock fault). Please try again later.", "rate_limit_exceeded"
    )
    assert "retry-after" not in dict(plan(Step(fault=fault)).headers)


def test_the_flow_listing_shows_the_chunks():
    listed = step_to_json(recorded_step())
    assert listed["chunking"] == "recorded"
    assert listed["chunks"][0] == {"reasoning": "Thi", "after_ms": 100.0}
    assert listed["chunks"][4] == {"call": 0, "arguments": "", "after_ms": 5.0}
    assert step_to_json(Step(content="x"))["chunks"] == []


# --- pieces and pauses -------------------------------------------------------------------


def test_pieces_are_the_recorded_ones_or_the_chunking_cut():
    step = recorded_step()
    assert pieces(step, "reasoning") == ("Thi", "nk.")
    assert pieces(step, "content") == ("Hello", " world")
    assert pieces(step, "call", 0) == ("", '{"path": ', '"a"}')
    authored = Step(content="a b", tool_calls=(ToolCall("f", "xyz"),), chunking=Chunking("char"))
    assert pieces(authored, "content") == ("a", " ", "b")
    assert pieces(authored, "call", 0) == ("x", "y", "z")
    assert pieces(authored, "reasoning") == ()


def test_pauses_are_recorded_gaps_for_a_recorded_step_and_authored_ones_otherwise():
    step = recorded_step()
    assert ttft_s(step) == 0.0
    assert [gap_s(step, i) for i in range(len(step.recorded))] == [
        0.1,
        0.0,
        0.0205,
        0.03,
        0.005,
        0.005,
        0.0,
    ]
    assert answer_delay_s(step) == pytest.approx(0.1605)
    authored = Step(content="a b", delay_ms=40, ttft_ms=300)
    assert (ttft_s(authored), gap_s(authored, 0), gap_s(authored, 9)) == (0.3, 0.04, 0.04)
    assert answer_delay_s(authored) == 0.3


@pytest.mark.parametrize(
    ("text", "factor"), [("real", 1.0), ("none", 0.0), ("2", 2.0), ("0.25", 0.25)]
)
def test_pacing_parses_real_none_or_a_positive_factor(text: str, factor: float):
    assert parse_pacing(text) == factor


@pytest.mark.parametrize("text", ["0", "-1", "fast", "nan", "inf", ""])
def test_pacing_refuses_anything_else(text: str):
    with pytest.raises(ValueError, match="real, none or a positive number"):
        parse_pacing(text)


def test_pacing_scales_recorded_gaps_only():
    step = recorded_step()
    assert paced(step, REAL_PACING) is step
    assert [c.after_ms for c in paced(step, 0.5).recorded][:3] == [50.0, 0.0, 10.25]
    assert all(c.after_ms == 0 for c in paced(step, NO_PACING).recorded)
    authored = Step(content="a", delay_ms=40, ttft_ms=300)
    assert paced(authored, NO_PACING) is authored


# --- replay over chat completions ------------------------------------------------------


def test_a_recorded_stream_replays_one_frame_per_recorded_chunk():
    step = recorded_step()
    got = deltas(step)
    assert got[0] == {"role": "assistant", "content": ""}
    assert got[1:3] == [{"reasoning_content": "Thi"}, {"reasoning_content": "nk."}]
    assert got[3:5] == [{"content": "Hello"}, {"content": " world"}]
    opening = {"index": 0, "id": "call_x", "type": "function"}
    assert got[5] == {"tool_calls": [{**opening, "function": {"name": "read", "arguments": ""}}]}
    assert got[6:8] == [
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"a"}'}}]},
    ]
    assert got[8] == {}
    assert len(got) == 1 + len(step.recorded) + 1
    assert sent_events(plan(step))[-1] == "[DONE]"


def test_a_recorded_opening_carries_its_arguments():
    step = parse_step(
        """
        tool_calls: [{name: read}]
        chunks:
          - {call: 0, arguments: '{"path": "a"}'}
        """
    )
    [_, opening, _] = deltas(step)
    assert opening["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path": "a"}'}  # type: ignore[index]


def pauses(step: Step, pacing: float = REAL_PACING, *, stream: bool = True) -> list[float]:
    shape = RequestShape(stream=stream, include_usage=False, messages=MESSAGES)
    planned = plan_response(step, META, "reasoning_content", shape, pacing)
    return [a.seconds for a in planned.actions if isinstance(a, Pause)]


def test_replay_pauses_are_the_recorded_gaps_times_the_pacing():
    step = recorded_step()
    assert pauses(step) == [0.1, 0.0205, 0.03, 0.005, 0.005]
    assert pauses(step, 2.0) == [0.2, 0.041, 0.06, 0.01, 0.01]
    assert pauses(step, NO_PACING) == []
    assert pauses(step, stream=False) == [pytest.approx(0.1605)]
    assert pauses(step, NO_PACING, stream=False) == []


def test_pauses_sit_before_their_chunks():
    step = recorded_step()
    shape = RequestShape(stream=True, include_usage=False, messages=MESSAGES)
    actions = plan_response(step, META, "reasoning_content", shape).actions
    first_pause = next(i for i, a in enumerate(actions) if isinstance(a, Pause))
    before = b"".join(a.data for a in actions[:first_pause] if isinstance(a, Send))
    assert b'"role":"assistant"' in before  # the role chunk goes at once
    assert b"Thi" not in before
    after = actions[first_pause + 1]
    assert isinstance(after, Send)
    assert b'"reasoning_content":"Thi"' in after.data


def test_authored_pacing_ignores_the_replay_pacing():
    step = Step(content="a b", delay_ms=40, ttft_ms=300)
    assert pauses(step, NO_PACING) == pauses(step) == [0.3, 0.04, 0.04]


def test_a_recorded_cut_fires_after_the_recorded_chunks():
    step = Step(
        content="ab",
        fault=CutFault(3, "abort"),
        recorded=(RecordedChunk("content", "a", None, 1), RecordedChunk("content", "b", None, 1)),
    )
    planned = plan(step)
    assert [c["choices"][0]["delta"] for c in sent_chunks(planned)] == [
        {"role": "assistant", "content": ""},
        {"content": "a"},
        {"content": "b"},
    ]
    assert planned.ending == "abort"
    assert any(isinstance(a, FaultFired) for a in planned.actions)


def test_both_reasoning_fields_carry_each_recorded_piece():
    step = Step(
        reasoning="ab", reasoning_field="both", recorded=(RecordedChunk("reasoning", "ab"),)
    )
    assert deltas(step)[1] == {"reasoning_content": "ab", "reasoning": "ab"}


# --- replay over Ollama's API ------------------------------------------------------------


def test_ollama_lines_replay_the_recorded_pieces_and_gaps():
    step = paced(recorded_step(), 2.0)
    lines = chat_lines(step, META, MESSAGES)
    messages = [json.loads(data)["message"] for _, data in lines]
    assert [m.get("thinking") for m in messages[:2]] == ["Thi", "nk."]
    assert [m["content"] for m in messages[2:4]] == ["Hello", " world"]
    assert messages[4]["tool_calls"] == [{"function": {"name": "read", "arguments": {"path": "a"}}}]
    # each text line after its gap, the tool calls after all of theirs, the end at once
    assert [pause for pause, _ in lines] == pytest.approx([0.2, 0.0, 0.041, 0.06, 0.02, 0.0])


def test_ollama_authored_pacing_is_unchanged():
    step = Step(content="a b", reasoning="r", delay_ms=40, ttft_ms=300)
    assert [pause for pause, _ in chat_lines(step, META, MESSAGES)] == [0.3, 0.04, 0.04, 0.0]
