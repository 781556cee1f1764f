"""The exact bytes and pauses of every response shape, without a socket."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.model import (
    Chunking,
    CutFault,
    ErrorEventFault,
    Extract,
    HttpFault,
    MalformedFault,
    StallFault,
    Step,
    ToolCall,
)
from mock_llm.play.response_plan import FaultFired, Pause, RequestShape, Send, plan_response
from servekit.json_codec import dumps
from servekit.sse import json_event

from ...conftest import META, plan, sent_body, sent_chunks, sent_events

READ = ToolCall("read", '{"path": "/homelab/backup-notes.md"}')


def accumulate(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold stream chunks the way the openai SDK does (strings concatenated, by index)."""
    message: dict[str, Any] = {}
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    for chunk in chunks:
        for choice in chunk["choices"]:
            finish = choice["finish_reason"] or finish
            for field, value in choice["delta"].items():
                if field == "tool_calls":
                    for part in value:
                        call = calls.setdefault(part["index"], {"function": {"arguments": ""}})
                        for k in ("id", "type"):
                            if k in part:
                                assert k not in call, f"{k} sent twice"
                                call[k] = part[k]
                        fn = part.get("function", {})
                        if "name" in fn:
                            assert "name" not in call["function"], "name sent twice"
                            call["function"]["name"] = fn["name"]
                        call["function"]["arguments"] += fn.get("arguments", "")
                elif field == "role":
                    assert "role" not in message, "role sent twice"
                    message["role"] = value
                else:
                    message[field] = message.get(field, "") + value
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"message": message, "finish_reason": finish}


def test_stream_is_role_then_content_then_finish_then_done():
    events = sent_events(plan(Step(content="Hi there", chunking=Chunking("word"))))
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": "Hi"},
        {"content": " there"},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, None, "stop"]


def test_every_chunk_shares_id_created_model_and_object():
    chunks = sent_chunks(plan(Step(content="a b c", reasoning="x y", tool_calls=(READ,))))
    assert {(c["id"], c["created"], c["model"], c["object"]) for c in chunks} == {
        (META.id, META.created, META.model, "chat.completion.chunk")
    }


def test_reasoning_streams_before_content_as_reasoning_content_by_default():
    deltas = [c["choices"][0]["delta"] for c in sent_chunks(plan(Step(content="A", reasoning="R")))]
    assert deltas[1:3] == [{"reasoning_content": "R"}, {"content": "A"}]


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("reasoning", {"reasoning": "R"}),
        ("both", {"reasoning_content": "R", "reasoning": "R"}),
    ],
)
def test_reasoning_field_is_selectable_per_step(field: str, expected: dict[str, str]):
    step = Step(reasoning="R", reasoning_field=field)  # type: ignore[arg-type]
    assert sent_chunks(plan(step))[1]["choices"][0]["delta"] == expected


def test_tool_call_opens_with_index_id_name_then_sends_argument_slices():
    step = Step(tool_calls=(READ,), chunking=Chunking("size", 10))
    deltas = [c["choices"][0]["delta"] for c in sent_chunks(plan(step))][1:-1]
    opening = deltas[0]["tool_calls"][0]
    assert opening == {
        "index": 0,
        "id": "call_mock7_0",
        "type": "function",
        "function": {"name": "read", "arguments": ""},
    }
    slices = [d["tool_calls"][0] for d in deltas[1:]]
    assert all(
        set(s) == {"index", "function"} and set(s["function"]) == {"arguments"} for s in slices
    )
    assert "".join(s["function"]["arguments"] for s in slices) == READ.arguments
    assert sent_chunks(plan(step))[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_second_tool_call_gets_the_next_index():
    step = Step(tool_calls=(READ, ToolCall("list", "{}", id="mine")), chunking=Chunking("whole"))
    folded = accumulate(sent_chunks(plan(step)))
    assert [(c["id"], c["function"]["name"]) for c in folded["message"]["tool_calls"]] == [
        ("call_mock7_0", "read"),
        ("mine", "list"),
    ]


def test_include_usage_adds_a_usage_chunk_with_empty_choices_before_done():
    events = sent_events(plan(Step(content="four"), include_usage=True))
    usage = json.loads(events[-2])
    assert usage["choices"] == []
    assert usage["usage"]["completion_tokens"] == 1
    assert usage["usage"]["total_tokens"] == usage["usage"]["prompt_tokens"] + 1
    assert all(json.loads(e)["usage"] is None for e in events[:-2])


def test_without_include_usage_chunks_carry_no_usage_key():
    assert all("usage" not in c for c in sent_chunks(plan(Step(content="x"))))


def test_finish_reason_can_be_length():
    assert (
        sent_chunks(plan(Step(content="x", finish_reason="length")))[-1]["choices"][0][
            "finish_reason"
        ]
        == "length"
    )


@pytest.mark.parametrize(
    "text", ["line one\nline two", "data: [DONE]\n\n", "sep\u2028arated", "\r\r\n"]
)
def test_content_with_newlines_stays_one_sse_line(text: str):
    events = sent_events(plan(Step(content=text, chunking=Chunking("whole"))))
    assert len(events) == 4  # role, content, finish, [DONE]: sent_events checks each is one line
    assert accumulate(sent_chunks(plan(Step(content=text))))["message"]["content"] == text


def test_pauses_are_ttft_first_then_delay_before_each_delta_only():
    step = Step(content="a b", ttft_ms=500, delay_ms=20, chunking=Chunking("word"))
    kinds = [
        f"pause {a.seconds:g}" if isinstance(a, Pause) else f"send {a.chunks}"
        for a in plan(step).actions
        if isinstance(a, Pause | Send)
    ]
    # role; "a"; then " b" with the finish chunk and [DONE] in the same write
    assert kinds == ["pause 0.5", "send 1", "pause 0.02", "send 1", "pause 0.02", "send 2"]


def test_frames_with_no_pause_between_go_out_in_one_write():
    [write] = plan(Step(content="a b c d", chunking=Chunking("char"))).actions
    assert isinstance(write, Send)
    assert write.chunks == 9  # role, seven characters, finish
    assert write.data.endswith(b"data: [DONE]\n\n")


def test_encoded_chunk_is_the_json_of_the_documented_chunk():
    first = sent_chunks(plan(Step(content="x"), include_usage=True))[0]
    assert first == {
        "id": META.id,
        "object": "chat.completion.chunk",
        "created": META.created,
        "model": META.model,
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": ""},
                "logprobs": None,
                "finish_reason": None,
            }
        ],
        "usage": None,
    }


def test_stream_plan_sends_headers_first_and_completes():
    p = plan(Step(content="x"))
    assert p.headers_first
    assert p.ending == "complete"
    assert dict(p.headers)["content-type"].startswith("text/event-stream")


# --- faults in streams -------------------------------------------------------------------


def chunk_sends_before_fault(step: Step) -> int:
    count = 0
    for action in plan(step).actions:
        if isinstance(action, FaultFired):
            return count
        if isinstance(action, Send):
            count += action.chunks
    raise AssertionError("the fault never fired")


@pytest.mark.parametrize("after", [0, 1, 3])
def test_cut_abort_fires_after_exactly_n_chunk_frames_and_sends_nothing_more(after: int):
    step = Step(content="a b c d e", fault=CutFault(after, "abort"))
    p = plan(step)
    assert chunk_sends_before_fault(step) == after
    assert isinstance(p.actions[-1], FaultFired)
    assert p.ending == "abort"


def test_cut_eof_ends_without_finish_reason_or_done():
    p = plan(Step(content="a b c d e", fault=CutFault(2, "eof")))
    assert p.ending == "eof"
    assert "[DONE]" not in sent_events(p)
    assert all(c["choices"][0]["finish_reason"] is None for c in sent_chunks(p))


def test_fault_after_more_chunks_than_the_stream_has_fires_before_done():
    p = plan(Step(content="a", fault=CutFault(99, "abort")))
    assert sent_chunks(p)[-1]["choices"][0]["finish_reason"] == "stop"
    assert "[DONE]" not in sent_events(p)


def test_stall_pauses_mid_stream_then_the_stream_completes():
    p = plan(Step(content="a b c", fault=StallFault(2, 30)))
    index = next(i for i, a in enumerate(p.actions) if isinstance(a, FaultFired))
    assert p.actions[index + 1] == Pause(30)
    assert sent_events(p)[-1] == "[DONE]"
    assert p.ending == "complete"


def test_malformed_line_goes_out_raw_and_the_stream_goes_on():
    events = sent_events(plan(Step(content="a b", fault=MalformedFault(1, "{broken"))))
    assert events[1] == "{broken"
    assert events[-1] == "[DONE]"


def test_error_event_is_an_openai_error_payload_and_ends_the_stream():
    p = plan(Step(content="a b c", fault=ErrorEventFault(2, "boom", "server_error", "e1")))
    last = json.loads(sent_events(p)[-1])
    assert last == {
        "error": {"message": "boom", "type": "server_error", "param": None, "code": "e1"}
    }
    assert p.ending == "eof"


# --- HTTP faults and non-streaming responses ------------------------------------------------


def test_http_fault_answers_status_with_error_body_and_retry_after():
    p = plan(Step(ttft_ms=100, fault=HttpFault(429, "slow down", "rate_limit_exceeded", None, 1.5)))
    assert p.status == 429
    assert dict(p.headers)["retry-after"] == "1.5"
    assert p.actions[0] == Pause(0.1)
    body = json.loads(next(a for a in p.actions if isinstance(a, Send)).data)
    assert body["error"]["message"] == "slow down"
    assert body["error"]["type"] == "rate_limit_exceeded"


def test_http_fault_without_retry_after_sends_no_header():
    p = plan(Step(fault=HttpFault(503, "busy", "server_error")), stream=False)
    assert "retry-after" not in dict(p.headers)


def completion_body(step: Step) -> tuple[int, dict[str, Any]]:
    p = plan(step, stream=False)
    return p.status, sent_body(p)


def test_completion_with_only_tool_calls_has_null_content():
    _, body = completion_body(Step(tool_calls=(READ,)))
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][0]["function"] == {"name": "read", "arguments": READ.arguments}
    assert body["object"] == "chat.completion"


def test_completion_stall_delays_then_answers():
    p = plan(Step(content="x", fault=StallFault(0, 2)), stream=False)
    assert p.actions[1] == Pause(2)
    assert completion_body(Step(content="x", fault=StallFault(0, 2)))[0] == 200


def test_completion_cut_sends_half_the_declared_body_and_aborts():
    p = plan(Step(content="some answer text", fault=CutFault(0)), stream=False)
    sent = b"".join(a.data for a in p.actions if isinstance(a, Send))
    assert p.ending == "abort"
    assert int(dict(p.headers)["content-length"]) > len(sent) > 0


def test_completion_malformed_is_an_invalid_json_body():
    p = plan(Step(content="x", fault=MalformedFault(0, "{nope")), stream=False)
    assert [a.data for a in p.actions if isinstance(a, Send)] == [b"{nope"]


def test_completion_error_event_becomes_http_500():
    status, body = completion_body(Step(content="x", fault=ErrorEventFault(0, "boom")))
    assert status == 500
    assert body["error"]["message"] == "boom"


steps = st.builds(
    Step,
    content=st.text(max_size=40),
    reasoning=st.text(max_size=20),
    tool_calls=st.lists(
        st.builds(
            ToolCall, name=st.sampled_from(["read", "grep", "list"]), arguments=st.text(max_size=30)
        ),
        max_size=2,
    ).map(tuple),
    chunking=st.sampled_from(
        [Chunking("whole"), Chunking("char"), Chunking("word"), Chunking("size", 3)]
    ),
)


@given(step=steps)
def test_non_streaming_response_is_the_assembled_stream(step: Step):
    folded = accumulate(sent_chunks(plan(step)))
    _, body = completion_body(step)
    choice = body["choices"][0]
    expected = {k: v for k, v in choice["message"].items() if v is not None and k != "refusal"}
    streamed = folded["message"]
    if not step.content and "content" in streamed and step.tool_calls:
        streamed.pop("content")  # the role chunk's "" is null content in the assembled message
    for call in streamed.get("tool_calls", []):
        call.setdefault("type", "function")
    assert streamed == expected
    assert folded["finish_reason"] == choice["finish_reason"]


def test_json_event_is_one_data_line():
    assert json_event({"a": "é"}) == 'data: {"a":"é"}\n\n'.encode()


EXCERPT_REQUEST = [
    {"role": "system", "content": '<doc path="/homelab/ups.md">The UPS holds 40 minutes.</doc>'},
    {"role": "user", "content": "How long does the UPS hold?"},
]
UPS_ANSWER = "From the notes:\n- The UPS holds 40 minutes. (source: /homelab/ups.md)"


@pytest.mark.parametrize("stream", [True, False])
def test_an_extract_step_answers_from_the_request_it_is_given(stream: bool):
    step = Step(extract=Extract(), chunking=Chunking("char"))
    shape = RequestShape(stream=stream, include_usage=False, messages=EXCERPT_REQUEST)
    p = plan_response(step, META, "reasoning_content", shape)
    if stream:
        assert accumulate(sent_chunks(p))["message"]["content"] == UPS_ANSWER
    else:
        assert sent_body(p)["choices"][0]["message"]["content"] == UPS_ANSWER


@pytest.mark.parametrize("stream", [True, False])
def test_an_extract_step_with_read_calls_the_tool_on_the_note_the_question_names(stream: bool):
    step = Step(extract=Extract(read="read"))
    shape = RequestShape(stream, include_usage=False, messages=EXCERPT_REQUEST, tools=("read",))
    p = plan_response(step, META, "reasoning_content", shape)
    if stream:
        message = accumulate(sent_chunks(p))["message"]
        finish = sent_chunks(p)[-1]["choices"][0]["finish_reason"]
    else:
        choice = sent_body(p)["choices"][0]
        message, finish = choice["message"], choice["finish_reason"]
    [call] = message["tool_calls"]
    assert call["function"] == {"name": "read", "arguments": '{"path": "/homelab/ups.md"}'}
    assert not message.get("content")
    assert finish == "tool_calls"


def test_an_extract_step_with_read_answers_when_the_tool_is_not_offered():
    step = Step(extract=Extract(read="read"))
    shape = RequestShape(False, include_usage=False, messages=EXCERPT_REQUEST, tools=("grep",))
    [choice] = sent_body(plan_response(step, META, "reasoning_content", shape))["choices"]
    assert choice["message"]["content"] == UPS_ANSWER


def test_a_lone_surrogate_is_written_as_its_json_escape_and_reads_back_the_same():
    obj = {"content": "hi \ud800 and é"}
    written = dumps(obj)
    assert b"\\ud800" in written
    assert "é".encode() in written  # everything else stays plain UTF-8
    assert json.loads(written) == obj
