"""The recorder's readers of Ollama's NDJSON and the Responses API's events, and what makes
every reader's step the same: any chunking of the bytes, any format it replays in.

The strongest check is a loop through the mock's own wire formats: a step played in a
format, read back by that format's reader, gives a step that plays byte for byte the same
there, and plays in every other format as the original step does."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm import builtin_flows
from mock_llm.flows.model import (
    Chunking,
    CutFault,
    ErrorEventFault,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    Step,
    ToolCall,
)
from mock_llm.play.response_plan import Api, RequestShape, ResponsePlan, plan_response
from mock_llm.record.recorded_step import LineReader
from mock_llm.record.recording import StreamParser, completion_step
from mock_llm.record.recording_ollama import OllamaStreamParser, ollama_answer_step
from mock_llm.record.recording_responses import ResponsesStreamParser, responses_answer_step

from ....support.cases import check_each
from ...conftest import MESSAGES, META, sent
from .test_recording import DEEP, recorded_steps

FLOWS = builtin_flows()
READERS: dict[Api, Callable[[], LineReader]] = {
    "openai": StreamParser,
    "ollama": OllamaStreamParser,
    "responses": ResponsesStreamParser,
}
WHOLE: dict[Api, Callable[[bytes], Step]] = {
    "openai": completion_step,
    "ollama": ollama_answer_step,
    "responses": responses_answer_step,
}
RECORDED_FROM: list[Api] = ["ollama", "responses"]
TARGETS: list[Api] = ["openai", "ollama", "responses"]


def play(step: Step, api: Api, *, stream: bool = True) -> ResponsePlan:
    shape = RequestShape(stream=stream, include_usage=False, messages=MESSAGES, api=api)
    return plan_response(step, META, step.reasoning_field or "reasoning_content", shape)


def read(api: Api, pieces: list[bytes], *, broken: bool = False, paced: bool = True) -> Step:
    """The step `api`'s reader makes of a body that arrived in `pieces`, the n-th at n ms
    (`paced`), or all at once."""
    reader = READERS[api]()
    for at_ms, piece in enumerate(pieces):
        reader.feed(piece, float(at_ms) if paced else 0.0)
    assert reader.problem is None
    return reader.step(broken)


def every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def rechunk(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` as the network might deliver it, cut at any byte (inside a character too)."""
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def shape(step: Step) -> list[tuple[str, str, int | None]]:
    return [(c.part, c.text, c.call) for c in step.recorded]


STREAMED = [
    (name, i, step)
    for name, flow in FLOWS.items()
    for i, step in enumerate(flow.steps)
    if not isinstance(step.fault, HttpFault)
]
ANSWERING = [(n, i, s) for n, i, s in STREAMED if s.fault is None]


# --- every built-in step, in every format -------------------------------------------------


def cases(steps: list[tuple[str, int, Step]], *apis: Api) -> list[tuple[str, tuple[Step, Api]]]:
    """Each step in each format, named `FLOW-STEP in API`."""
    return [
        (f"{name}-{index + 1} in {api}", (step, api)) for name, index, step in steps for api in apis
    ]


@pytest.mark.sweep
def test_every_built_in_stream_recorded_replays_byte_for_byte_in_its_format():
    def replays_the_same(case: tuple[Step, Api]) -> None:
        step, api = case
        original = play(step, api)
        recorded = read(api, every(sent(original), 7), broken=original.ending == "abort")
        replayed = play(recorded, api)
        assert sent(replayed) == sent(original)
        assert replayed.ending == original.ending
        assert step.content.startswith(recorded.content)  # all of it, unless cut short

    every_case = cases(STREAMED, *RECORDED_FROM)
    assert check_each(every_case, replays_the_same) == len(every_case) > 0


def test_every_built_in_whole_answer_records_as_a_step_that_answers_the_same():
    def answers_the_same(case: tuple[Step, Api]) -> None:
        step, api = case
        original = play(step, api, stream=False)
        recorded = WHOLE[api](sent(original))
        assert recorded.recorded == ()
        assert sent(play(recorded, api, stream=False)) == sent(original)

    every_case = cases(ANSWERING, *RECORDED_FROM)
    assert check_each(every_case, answers_the_same) == len(every_case) > 0


def whole_arguments(step: Step) -> Step:
    """`step` with each tool call's arguments in one piece, its opening, as Ollama sends
    them (it does not stream arguments)."""
    calls = [
        RecordedChunk("call", call.arguments, index, 0.0)
        for index, call in enumerate(step.tool_calls)
    ]
    texts = [c for c in step.recorded if c.part != "call"]
    return replace(step, recorded=(*texts, *calls)) if step.recorded else step


@pytest.mark.sweep
def test_a_step_recorded_in_one_format_replays_in_every_format_as_the_original():
    """A recorded step is format-neutral: the same chunks, whatever it was recorded from.
    From Ollama a tool call's arguments come whole, so that is what every format replays."""

    def replays_everywhere(case: tuple[Step, Api]) -> None:
        step, source = case
        recorded = read(source, every(sent(play(step, source)), 5))
        reference = read("responses", every(sent(play(step, "responses")), 5))  # streams all
        if source == "ollama":
            reference = whole_arguments(reference)
        for target in TARGETS:
            assert sent(play(recorded, target)) == sent(play(reference, target)), target
            whole = sent(play(step, target, stream=False))
            assert sent(play(recorded, target, stream=False)) == whole, target

    every_case = cases(ANSWERING, *RECORDED_FROM)
    assert check_each(every_case, replays_everywhere) == len(every_case) > 0


def test_a_tool_call_recorded_from_ollama_replays_with_its_arguments_in_its_opening():
    step = FLOWS["multi-tool"].steps[0]
    recorded = read("ollama", [sent(play(step, "ollama"))])
    assert [(c.call, c.text) for c in recorded.recorded if c.part == "call"] == [
        (i, call.arguments) for i, call in enumerate(step.tool_calls)
    ]
    assert [(c.name, c.arguments) for c in recorded.tool_calls] == [
        (c.name, c.arguments) for c in step.tool_calls
    ]


@pytest.mark.parametrize("api", ["openai", "ollama", "responses"])
@given(step=recorded_steps(), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_any_chunking_of_the_recorded_bytes_gives_the_same_step(
    api: Api, step: Step, cuts: list[int]
):
    """Each read at the same time, so the gaps agree too; cuts fall inside characters."""
    data = sent(play(step, api))
    assert read(api, rechunk(data, cuts), paced=False) == read(api, [data], paced=False)


# --- Ollama's lines -----------------------------------------------------------------------


def ndjson(*lines: object) -> bytes:
    return b"".join(
        (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines
    )


def said(**message: Any) -> dict[str, Any]:
    return {"model": "m", "message": {"role": "assistant", **message}, "done": False}


def done(reason: str = "stop", **message: Any) -> dict[str, Any]:
    last = {"role": "assistant", "content": "", **message}
    return {"model": "m", "message": last, "done": True, "done_reason": reason}


def test_ollama_thinking_and_content_are_pieces_with_their_gaps():
    step = read(
        "ollama",
        [ndjson(said(content="", thinking="Hm.")), ndjson(said(content="Hi", thinking="")), b""],
    )
    assert [(c.part, c.text, c.after_ms) for c in step.recorded] == [
        ("reasoning", "Hm.", 0.0),
        ("content", "Hi", 1.0),
    ]
    assert (step.fault, step.reasoning_field) == (CutFault(2, "eof"), None)


def test_ollama_tool_calls_are_whole_openings_and_finish_as_tool_calls():
    calls = [
        {"function": {"name": "read", "arguments": {"path": "/a"}}},
        {"id": "c2", "function": {"name": "ls", "arguments": "{}"}},
    ]
    step = read("ollama", [ndjson(said(content="", tool_calls=calls), done())])
    assert step.tool_calls == (ToolCall("read", '{"path": "/a"}'), ToolCall("ls", "{}", "c2"))
    assert [(c.call, c.after_ms) for c in step.recorded] == [(0, 0.0), (1, 0.0)]
    assert (step.finish_reason, step.fault) == ("tool_calls", None)


@pytest.mark.parametrize(
    ("reason", "finish"), [("stop", "stop"), ("length", "length"), ("load", None)]
)
def test_ollamas_done_reason_is_the_finish_reason(reason: str, finish: str | None):
    step = read("ollama", [ndjson(said(content="a"), done(reason))])
    assert (step.finish_reason, step.fault) == (finish, None)


def test_an_ollama_error_line_is_an_error_fault_and_ends_the_recording():
    body = ndjson(said(content="a"), {"error": "model crashed"}, said(content="never"), done())
    step = read("ollama", [body])
    assert step.content == "a"
    assert step.fault == ErrorEventFault(1, "model crashed", "server_error", None)


def test_an_ollama_line_that_is_no_json_object_is_malformed_and_the_stream_goes_on():
    body = ndjson(said(content="a"), b"{oops\xff", b"", b"  ", b"[1]", said(content="b"), done())
    step = read("ollama", [body])
    assert step.content == "ab"
    assert step.fault == MalformedFault(1, "{oops\ufffd")


def test_an_ollama_stream_without_its_done_line_is_cut_where_it_stopped():
    body = ndjson(said(thinking="t", content=""), said(content="a"))
    assert read("ollama", [body], broken=True).fault == CutFault(2, "abort")
    assert read("ollama", [body]).fault == CutFault(2, "eof")


def test_an_ollama_last_line_without_its_line_end_is_read_unless_the_stream_broke():
    body = ndjson(said(content="a")) + json.dumps(done()).encode()
    assert read("ollama", [body]).fault is None
    assert read("ollama", [body], broken=True).fault == CutFault(1, "abort")


def test_an_ollama_line_nested_too_deep_is_malformed():
    step = read("ollama", [ndjson(said(content="a"), DEEP, done())])
    assert step.content == "a"
    assert isinstance(step.fault, MalformedFault)


def test_a_generate_stream_reads_its_response_and_thinking():
    lines = [
        {"model": "m", "response": "", "thinking": "Hm.", "done": False},
        {"model": "m", "response": "Nightly.", "done": False},
        {"model": "m", "response": "", "done": True, "done_reason": "stop"},
    ]
    reader = OllamaStreamParser(generate=True)
    reader.feed(ndjson(*lines), 3.0)
    step = reader.step(broken=False)
    assert (step.reasoning, step.content, step.finish_reason) == ("Hm.", "Nightly.", "stop")
    assert [c.part for c in step.recorded] == ["reasoning", "content"]


def test_a_whole_ollama_answer_is_its_message():
    body = done("stop", content="Hi", thinking="Hm.", tool_calls=[{"function": {"name": "f"}}])
    step = ollama_answer_step(json.dumps(body).encode())
    assert (step.content, step.reasoning, step.tool_calls) == ("Hi", "Hm.", (ToolCall("f", ""),))
    assert step.finish_reason == "tool_calls"
    generated = {"response": "Hi", "done": True, "done_reason": "length"}
    step = ollama_answer_step(json.dumps(generated).encode(), generate=True)
    assert (step.content, step.finish_reason) == ("Hi", "length")


def test_a_whole_ollama_error_or_no_json_is_its_fault():
    assert ollama_answer_step(b'{"error": "no model"}').fault == ErrorEventFault(
        0, "no model", "server_error", None
    )
    assert ollama_answer_step(b"{oops\nmore").fault == MalformedFault(0, "{oops more")


# --- the Responses API's events ------------------------------------------------------------


def sse(*events: dict[str, Any] | bytes, named: bool = True) -> bytes:
    out = b""
    for event in events:
        if isinstance(event, bytes):
            out += b"data: " + event + b"\n\n"
            continue
        head = b"event: " + event["type"].encode() + b"\n" if named else b""
        out += head + b"data: " + json.dumps(event).encode() + b"\n\n"
    return out


def ev(type: str, **fields: Any) -> dict[str, Any]:
    return {"type": type, **fields}


COMPLETED = ev("response.completed", response={"status": "completed", "output": []})
OPENED = [ev("response.created"), ev("response.in_progress")]


def test_responses_deltas_are_pieces_and_a_call_opens_at_its_item():
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "read"}
    body = sse(
        *OPENED,
        ev("response.reasoning_text.delta", item_id="rs_0", delta="Hm."),
        ev("response.output_text.delta", item_id="msg_1", delta="Hi"),
        ev("response.output_item.added", output_index=2, item={**call, "arguments": ""}),
        ev("response.function_call_arguments.delta", item_id="fc_1", delta='{"a"'),
        ev("response.function_call_arguments.delta", item_id="fc_1", delta=": 1}"),
        ev("response.function_call_arguments.done", item_id="fc_1", arguments='{"a": 1}'),
        COMPLETED,
    )
    step = read("responses", [body])
    assert shape(step) == [
        ("reasoning", "Hm.", None),
        ("content", "Hi", None),
        ("call", "", 0),
        ("call", '{"a"', 0),
        ("call", ": 1}", 0),
    ]
    assert step.tool_calls == (ToolCall("read", '{"a": 1}', "call_9"),)
    assert (step.finish_reason, step.fault) == ("tool_calls", None)


def test_responses_texts_that_came_only_whole_are_one_piece_each():
    body = sse(
        ev("response.reasoning_summary_text.done", item_id="rs_0", text="Thought."),
        ev("response.output_text.done", item_id="msg_1", text="Hello."),
        ev("response.function_call_arguments.done", item_id="fc_2", arguments="{}"),
        COMPLETED,
    )
    assert shape(read("responses", [body])) == [
        ("reasoning", "Thought.", None),
        ("content", "Hello.", None),
        ("call", "{}", 0),
    ]


def test_a_reasoning_summary_streams_as_reasoning():
    body = sse(ev("response.reasoning_summary_text.delta", item_id="rs", delta="A"), COMPLETED)
    assert read("responses", [body]).reasoning == "A"


def test_the_event_line_names_an_event_whose_data_has_no_type():
    event = {"item_id": "m", "delta": "Hi"}
    body = b"event: response.output_text.delta\ndata: " + json.dumps(event).encode() + b"\n\n"
    assert read("responses", [body + sse(COMPLETED)]).content == "Hi"


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_output_tokens", "length"), ("content_filter", "content_filter"), (None, "length")],
)
def test_an_incomplete_response_finishes_by_its_reason(reason: str | None, finish: str):
    details = {"reason": reason} if reason else None
    response = {"status": "incomplete", "incomplete_details": details}
    end = ev("response.incomplete", response=response)
    step = read("responses", [sse(ev("response.output_text.delta", delta="a"), end)])
    assert (step.finish_reason, step.fault) == (finish, None)


@pytest.mark.parametrize(
    ("events", "fault"),
    [
        (  # the mock's: the event's code is its fault's code or type, the failure its type
            [
                ev("error", code="x1", message="boom", param=None),
                ev("response.failed", response={"error": {"code": "server_error", "type": "t"}}),
            ],
            ErrorEventFault(3, "boom", "t", "x1"),
        ),
        (
            [
                ev("error", code="server_error", message="boom"),
                ev("response.failed", response={"error": {"type": "server_error"}}),
            ],
            ErrorEventFault(3, "boom", "server_error", None),
        ),
        (  # the API's own: no type anywhere
            [ev("error", code="rate_limit_exceeded", message="slow")],
            ErrorEventFault(3, "slow", "server_error", "rate_limit_exceeded"),
        ),
        (  # a server that nests the event's fields
            [ev("error", error={"message": "m", "type": "invalid_request_error", "code": "c"})],
            ErrorEventFault(3, "m", "invalid_request_error", "c"),
        ),
        (
            [ev("response.failed", response={"error": {"code": "server_error", "message": "no"}})],
            ErrorEventFault(3, "no", "server_error", "server_error"),
        ),
    ],
    ids=["mock-coded", "mock-typed", "api", "nested", "failed-alone"],
)
def test_a_responses_failure_is_an_error_fault_where_it_came(
    events: list[dict[str, Any]], fault: ErrorEventFault
):
    body = sse(*OPENED, ev("response.output_text.delta", delta="a"), *events, COMPLETED)
    step = read("responses", [body])
    assert step.content == "a"
    assert step.fault == fault


def test_events_the_mock_does_not_send_are_not_counted_for_a_fault():
    body = sse(ev("response.queued"), *OPENED, ev("response.reasoning_summary_part.added"))
    assert read("responses", [body]).fault == CutFault(2, "eof")


def test_a_responses_line_that_is_no_json_object_is_malformed_and_the_stream_goes_on():
    body = sse(
        ev("response.output_text.delta", delta="a"),
        b"{oops\xff",
        DEEP,
        ev("response.output_text.delta", delta="b"),
        COMPLETED,
    )
    step = read("responses", [body])
    assert step.content == "ab"
    assert step.fault == MalformedFault(1, "{oops\ufffd")


def test_a_hostile_event_type_or_item_id_is_read_as_none():
    body = sse(
        {"type": ["x"], "delta": "a"},
        ev("response.output_text.delta", item_id={"a": 1}, delta="b"),
        ev("response.function_call_arguments.delta", item_id=[1], delta="{}"),
        COMPLETED,
        named=False,
    )
    step = read("responses", [body])
    assert (step.content, step.tool_calls) == ("b", (ToolCall("", "{}"),))


def test_a_whole_responses_answer_is_its_output_items():
    answer = {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Hm."}]},
            {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
            {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
            {"type": "web_search_call"},
        ],
    }
    step = responses_answer_step(json.dumps(answer).encode())
    assert (step.reasoning, step.content) == ("Hm.", "Hi")
    assert (step.tool_calls, step.finish_reason) == ((ToolCall("f", "{}", "c"),), "length")


@pytest.mark.parametrize(
    "body",
    [
        {"status": "failed", "error": {"code": "server_error", "message": "no"}, "output": []},
        {"error": {"code": "server_error", "message": "no"}},
    ],
)
def test_a_whole_responses_failure_is_an_error_fault(body: dict[str, Any]):
    assert responses_answer_step(json.dumps(body).encode()).fault == ErrorEventFault(
        0, "no", "server_error", "server_error"
    )


# --- hostile bodies, in every format -------------------------------------------------------


@pytest.mark.parametrize("api", ["openai", "ollama", "responses"])
def test_a_line_longer_than_the_reader_holds_stops_the_reading_with_a_problem(api: Api):
    reader = READERS[api]()
    reader.feed(b"data: " + b"x" * (8 * 1024 * 1024), 1.0)
    reader.feed(b"x\n\n", 2.0)
    assert reader.problem is not None
    assert "line is longer than 8388608 bytes" in reader.problem
    reader.feed(b"more\n", 3.0)  # ignored from now on
    assert reader.problem.endswith("line is longer than 8388608 bytes")


@pytest.mark.parametrize("api", ["openai", "ollama", "responses"])
def test_invalid_utf8_split_across_reads_becomes_replacement_characters(api: Api):
    data = sent(play(Step(content="añb€c", finish_reason="stop"), api))
    data = data.replace("ñ".encode(), b"\xc3\xff")  # a broken two-byte character
    cut = data.index("€".encode()) + 1  # and a good three-byte one split
    step = read(api, [data[:cut], data[cut:]])
    assert step.content == "a\ufffd\ufffdb€c"
    assert step.fault is None
    reader = READERS[api]()
    reader.feed(data, 1.0)
    assert reader.not_utf8


@pytest.mark.parametrize("api", ["openai", "ollama", "responses"])
def test_a_character_split_across_reads_is_not_taken_for_invalid_utf8(api: Api):
    data = sent(play(Step(content="a€c", finish_reason="stop"), api))
    cut = data.index("€".encode()) + 1
    reader = READERS[api]()
    reader.feed(data[:cut], 1.0)
    reader.feed(data[cut:], 2.0)
    assert not reader.not_utf8


@pytest.mark.parametrize("api", ["openai", "ollama", "responses"])
def test_more_pieces_than_max_chunks_stop_the_reading_and_drop_what_was_read(api: Api):
    data = sent(play(Step(content="x" * 50, finish_reason="stop", chunking=Chunking("char")), api))
    reader = READERS[api]()
    reader.max_chunks = 10
    reader.feed(data, 1.0)

    assert reader.problem == "the answer has more than 10 chunks"
    assert reader.step(False).recorded == ()


def test_only_choice_0_of_a_stream_is_recorded_of_10000():
    chunks = [
        {"choices": [{"index": n, "delta": {"content": f"LEAK {n}"}, "finish_reason": "length"}]}
        for n in range(1, 10_000)
    ]
    chunks.append({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    step = read("openai", [body + b"data: [DONE]\n\n"])

    assert (step.content, step.finish_reason, step.fault) == ("ok", "stop", None)
