"""mock_llm.wire.llama_cpp: chat completions framed as llama.cpp's llama-server frames them.

The frames' shapes here are the real server's as tests/thirdparty/test_llama_server.py
reads them from llama-server itself (and diffs them against the mock's, field by field).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from mock_llm import parse_flows
from mock_llm.flows.flow_writer import dump_flows
from mock_llm.flows.model import RecordedChunk, Step
from mock_llm.record.recording import StreamParser, completion_step

from ...conftest import FULL, plan, sent, sent_body

CHUNK_KEYS = ["choices", "created", "id", "model", "system_fingerprint", "object"]
TIMINGS_KEYS = [
    "cache_n", "prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
    "predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second",
]  # fmt: skip
LLAMA = replace(FULL, dialect="llama.cpp")


def events(data: bytes) -> list[dict[str, Any]]:
    lines = data.decode().split("\n\n")
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def test_every_chunk_has_the_servers_keys_in_its_order_and_no_logprobs():
    for event in events(sent(plan(LLAMA))):
        assert list(event)[:6] == CHUNK_KEYS
        for choice in event["choices"]:
            assert list(choice) == ["finish_reason", "index", "delta"]


def test_the_stream_opens_with_the_role_and_a_null_content():
    first = events(sent(plan(LLAMA)))[0]
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": None}


def test_the_finish_chunk_carries_the_timings_when_no_usage_was_asked_for():
    *_, last = events(sent(plan(LLAMA)))
    assert last["choices"][0] == {"finish_reason": "tool_calls", "index": 0, "delta": {}}
    assert list(last["timings"]) == TIMINGS_KEYS
    assert sent(plan(LLAMA)).endswith(b"data: [DONE]\n\n")


def test_with_usage_asked_for_a_chunk_of_usage_and_timings_follows_the_finish():
    *_, finish, usage = events(sent(plan(LLAMA, include_usage=True)))
    assert "timings" not in finish
    assert usage["choices"] == []
    assert list(usage)[6:] == ["usage", "timings"]
    assert list(usage["usage"]) == [
        "completion_tokens", "prompt_tokens", "total_tokens", "prompt_tokens_details"
    ]  # fmt: skip


def test_the_stream_says_what_the_step_says():
    deltas = [e["choices"][0]["delta"] for e in events(sent(plan(LLAMA)))]
    assert "".join(d.get("content") or "" for d in deltas) == FULL.content
    assert "".join(d.get("reasoning_content", "") for d in deltas) == FULL.reasoning
    [call] = [c for d in deltas for c in d.get("tool_calls", []) if "id" in c]
    assert call["function"]["name"] == "read"


def test_a_whole_answer_has_the_servers_keys_in_its_order():
    body = sent_body(plan(LLAMA, stream=False))
    assert list(body) == ["choices", "created", "model", "system_fingerprint", "object",
                          "usage", "id", "timings"]  # fmt: skip
    assert list(body["choices"][0]) == ["finish_reason", "index", "message"]
    message = body["choices"][0]["message"]
    assert (message["role"], message["content"]) == ("assistant", FULL.content)
    assert message["tool_calls"][0]["function"]["name"] == "read"


def test_a_recorded_steps_timings_are_its_own_pace():
    chunks = tuple(
        RecordedChunk("content", text, None, gap)
        for text, gap in (("Back", 400.0), ("ups", 25.0), (".", 35.0))
    )
    step = Step(content="Backups.", recorded=chunks, dialect="llama.cpp")
    timings = sent_body(plan(step, stream=False))["timings"]
    assert (timings["prompt_ms"], timings["predicted_ms"]) == pytest.approx((400.0, 60.0))


def test_the_openai_dialect_is_unchanged_by_default():
    first = events(sent(plan(FULL)))[0]
    assert next(iter(first)) == "id"
    assert "logprobs" in first["choices"][0]


def test_a_llama_cpp_stream_records_as_a_llama_cpp_step_and_replays_in_its_frames():
    original = sent(plan(LLAMA))
    parser = StreamParser()
    parser.feed(original, 0.0)
    recorded = parser.step(broken=False)
    assert recorded.dialect == "llama.cpp"
    strip = [{k: v for k, v in e.items() if k != "timings"} for e in events(original)]
    again = [{k: v for k, v in e.items() if k != "timings"} for e in events(sent(plan(recorded)))]
    assert again == strip


def test_an_openai_stream_and_answer_record_with_no_dialect():
    parser = StreamParser()
    parser.feed(sent(plan(FULL)), 0.0)
    assert parser.step(broken=False).dialect is None
    assert completion_step(sent(plan(FULL, stream=False))).dialect is None


def test_a_llama_cpp_whole_answer_records_as_a_llama_cpp_step():
    assert completion_step(sent(plan(LLAMA, stream=False))).dialect == "llama.cpp"


def test_a_flow_file_keeps_a_steps_dialect_and_refuses_an_unknown_one():
    flows = parse_flows(
        "flows:\n  f:\n    steps:\n      - content: hi\n        dialect: llama.cpp\n", "t.yaml"
    )
    assert flows["f"].steps[0].dialect == "llama.cpp"
    assert parse_flows(dump_flows(flows.values()), "again.yaml")["f"].steps == flows["f"].steps
    with pytest.raises(ValueError, match="dialect"):
        parse_flows("flows:\n  f:\n    steps:\n      - content: hi\n        dialect: vllm\n", "t")
