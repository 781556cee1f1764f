"""The recorder, driven as an ASGI app (no sockets), on Ollama's API and the Responses API,
on compressed answers cut short, and on hostile upstreams: what passes through, what is
recorded, and what is not, with why."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pytest

from mock_llm.flows.flow_file import load_flow_file
from mock_llm.flows.model import (
    CutFault,
    ErrorEventFault,
    HttpFault,
    MalformedFault,
    Step,
    ToolCall,
)

from .test_recorder_edges import (
    ANSWER_BYTES,
    CHAT,
    Client,
    Setup,
    UpstreamBody,
    http_scope,
    recorder_over,
    streamed,
    whole,
)

NDJSON = {"content-type": "application/x-ndjson"}
SSE = {"content-type": "text/event-stream"}
BIG = 8 * 1024 * 1024  # the readers' line limit


def ndjson(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def said(content: str = "", done: bool = False, thinking: str = "", **more: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "thinking": thinking}
    return {"model": "m", "message": message, "done": done, **more}


OLLAMA_STREAM = ndjson(said("Nightly"), said(" at 02:00."), said(done=True, done_reason="stop"))


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def delta(text: str) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": "msg_1", "delta": text}


COMPLETED = {"type": "response.completed", "response": {"status": "completed", "output": []}}
RESPONSES_STREAM = sse(delta("Nightly"), delta(" at 02:00."), COMPLETED)
CHAT_STREAM = (
    b'data: {"choices": [{"index": 0, "delta": {"content": "Nightly"}}]}\n\n'
    b'data: {"choices": [{"index": 0, "delta": {"content": " at 02:00."}}]}\n\n'
    b"data: [DONE]\n\n"
)


def ollama_ask(key: str, *, flow: str = "f", **more: Any) -> bytes:
    messages = [{"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"}]
    return json.dumps({"model": "llama3", "messages": messages, **more}).encode()


def responses_ask(input: object, **more: Any) -> bytes:
    return json.dumps({"model": "gpt-test", "input": input, **more}).encode()


async def through(setup: Setup, path: str, body: bytes) -> Client:
    client = Client([body])
    await setup.run(client, http_scope(path))
    return client


def recorded(setup: Setup) -> dict[str, list[Step]]:
    return {name: list(flow.steps) for name, flow in load_flow_file(setup.out).items()}


# --- Ollama's API ---------------------------------------------------------------------------


async def test_an_ollama_stream_goes_to_the_servers_root_and_is_recorded_under_its_trigger(
    tmp_path, key: str
):
    answer = streamed(UpstreamBody([OLLAMA_STREAM[:30], OLLAMA_STREAM[30:]]), headers=NDJSON)
    async with recorder_over(tmp_path, answer) as setup:
        client = await through(setup, "/api/chat", ollama_ask(key))
    [request] = setup.requests
    assert str(request.url) == "http://upstream.test/api/chat"
    assert (client.status, client.body, client.ended) == (200, OLLAMA_STREAM, True)
    [step] = recorded(setup)["f"]
    assert [c.text for c in step.recorded] == ["Nightly", " at 02:00."]
    assert (step.content, step.finish_reason, step.fault) == ("Nightly at 02:00.", "stop", None)
    assert setup.log == ["mock_llm record: f step 1: 2 chunks, stop"]
    assert "(model llama3)" in load_flow_file(setup.out)["f"].description


async def test_a_whole_ollama_answer_is_recorded_whole(tmp_path, key: str):
    body = json.dumps(said("Nightly.", done=True, done_reason="stop", thinking="Hm.")).encode()
    async with recorder_over(tmp_path, whole(body)) as setup:
        await through(setup, "/api/chat", ollama_ask(key, stream=False))
    [step] = recorded(setup)["f"]
    assert (step.content, step.reasoning, step.recorded) == ("Nightly.", "Hm.", ())


async def test_an_ollama_generate_stream_is_recorded_and_named_by_its_prompt(tmp_path):
    lines = [
        {"model": "m", "response": "Nightly.", "done": False},
        {"model": "m", "response": "", "done": True, "done_reason": "stop"},
    ]
    body = json.dumps({"model": "m", "prompt": "When? [[mock:gen#k1]]", "system": "Be brief."})
    answer = streamed(UpstreamBody([ndjson(*lines)]), headers=NDJSON)
    async with recorder_over(tmp_path, answer) as setup:
        await through(setup, "/api/generate", body.encode())
    [request] = setup.requests
    assert request.url.path == "/api/generate"
    [step] = recorded(setup)["gen"]
    assert [c.text for c in step.recorded] == ["Nightly."]


async def test_an_ollama_error_status_is_an_http_fault_with_its_retry_after(tmp_path, key: str):
    answer = whole(b'{"error": "too many requests"}', 429, {"retry-after": "2"})
    async with recorder_over(tmp_path, answer) as setup:
        client = await through(setup, "/api/chat", ollama_ask(key))
    assert client.status == 429
    [step] = recorded(setup)["f"]
    assert step.fault == HttpFault(429, "too many requests", "rate_limit_exceeded", None, 2.0)


async def test_an_ollama_stream_cut_mid_body_is_a_cut_fault_after_its_lines(tmp_path, key: str):
    cut = OLLAMA_STREAM.index(b"\n") + 10  # a line and a piece of the next
    body = UpstreamBody([OLLAMA_STREAM[:cut]], error=httpx.ReadError("connection reset"))
    async with recorder_over(tmp_path, streamed(body, headers=NDJSON)) as setup:
        client = await through(setup, "/api/chat", ollama_ask(key))
    assert (client.body, client.ended) == (OLLAMA_STREAM[:cut], False)
    [step] = recorded(setup)["f"]
    assert (step.content, step.fault) == ("Nightly", CutFault(1, "abort"))


async def test_other_ollama_paths_go_to_the_root_and_are_not_recorded(tmp_path):
    async with recorder_over(tmp_path, whole(b'{"models": []}')) as setup:
        client = Client([b""])
        await setup.run(client, http_scope("/api/tags", "GET"))
    [request] = setup.requests
    assert str(request.url) == "http://upstream.test/api/tags"
    assert (client.body, setup.recorder.saved, setup.recorder.skipped) == (b'{"models": []}', 0, 0)


# --- the Responses API ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/responses", "/responses"])
async def test_a_responses_stream_is_recorded_under_the_trigger_in_its_input(
    tmp_path, key: str, path: str
):
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": f"[[mock:r#{key}]] When?"}]}
    ]
    answer = streamed(UpstreamBody([RESPONSES_STREAM]), headers=SSE)
    async with recorder_over(tmp_path, answer) as setup:
        client = await through(setup, path, responses_ask(items, instructions="Be brief."))
    [request] = setup.requests
    assert str(request.url) == "http://upstream.test/v1/responses"
    assert client.body == RESPONSES_STREAM
    [step] = recorded(setup)["r"]
    assert [c.text for c in step.recorded] == ["Nightly", " at 02:00."]
    assert (step.finish_reason, step.fault) == ("stop", None)


async def test_a_responses_tool_round_is_the_next_step_of_its_turn(tmp_path):
    """No trigger: both requests hash the turn's messages up to its question."""
    call = {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"}
    tool_round = [
        {"role": "user", "content": "When do backups run?"},
        call,
        {"type": "function_call_output", "call_id": "c1", "output": "nightly"},
    ]
    answer = streamed(UpstreamBody([RESPONSES_STREAM]), headers=SSE)
    async with recorder_over(tmp_path, answer) as setup:
        await through(setup, "/v1/responses", responses_ask("When do backups run?"))
        await through(setup, "/v1/responses", responses_ask(tool_round))
        await through(setup, "/v1/responses", responses_ask("When do backups run?"))
    flows = recorded(setup)
    assert [len(steps) for steps in flows.values()] == [2, 1]
    [name, again] = flows
    assert name.startswith("rec-")
    assert again == f"{name}-2"


async def test_a_whole_responses_answer_is_recorded_whole(tmp_path, key: str):
    answer: dict[str, Any] = {
        "status": "completed",
        "output": [{"type": "function_call", "name": "read", "arguments": "{}", "call_id": "c"}],
    }
    async with recorder_over(tmp_path, whole(json.dumps(answer).encode())) as setup:
        await through(setup, "/v1/responses", responses_ask(f"[[mock:r#{key}]]"))
    [step] = recorded(setup)["r"]
    assert (step.tool_calls, step.finish_reason) == ((ToolCall("read", "{}", "c"),), "tool_calls")


async def test_a_responses_error_event_is_recorded_as_an_error_fault(tmp_path, key: str):
    error = {"type": "error", "code": "server_error", "message": "boom", "param": None}
    body = sse(delta("a"), error, {"type": "response.failed", "response": {"status": "failed"}})
    answer = streamed(UpstreamBody([body]), headers=SSE)
    async with recorder_over(tmp_path, answer) as setup:
        await through(setup, "/v1/responses", responses_ask(f"[[mock:r#{key}]]"))
    [step] = recorded(setup)["r"]
    assert step.fault == ErrorEventFault(1, "boom", "server_error", None)


async def test_a_request_the_mock_would_refuse_is_recorded_under_a_hash(tmp_path):
    answer = whole(b'{"error": {"message": "input is required"}}', 400)
    async with recorder_over(tmp_path, answer) as setup:
        await through(setup, "/v1/responses", b'{"model": "m", "input": 5}')
    [(name, [step])] = recorded(setup).items()
    assert name.startswith("rec-")
    assert isinstance(step.fault, HttpFault)


# --- gzip answers cut before their end -------------------------------------------------------


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body, mtime=0)


APIS = [
    (CHAT, SSE, CHAT_STREAM, b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'),
    ("/api/chat", NDJSON, OLLAMA_STREAM, ollama_ask("k1")),
    ("/v1/responses", SSE, RESPONSES_STREAM, responses_ask("hi")),
    (CHAT, {"content-type": "application/json"}, ANSWER_BYTES, ollama_ask("k1")),
]
API_IDS = ["chat", "ollama", "responses", "whole"]


@pytest.mark.parametrize(("path", "headers", "plain", "request_body"), APIS, ids=API_IDS)
async def test_a_whole_gzip_answer_is_recorded_from_its_decoded_text(
    tmp_path, path: str, headers: dict[str, str], plain: bytes, request_body: bytes
):
    packed = gzipped(plain)
    parts = [packed[:9], packed[9:20], packed[20:]]
    answer = streamed(UpstreamBody(parts), headers={**headers, "content-encoding": "gzip"})
    async with recorder_over(tmp_path, answer) as setup:
        client = await through(setup, path, request_body)
    assert client.body == packed
    assert (setup.recorder.saved, setup.recorder.skipped) == (1, 0)
    [[step]] = recorded(setup).values()
    assert step.content.startswith("Nightly")


CUTS = [
    ("no-trailer", lambda packed: [packed[:-8]], None),
    ("mid-deflate", lambda packed: [packed[:12], packed[12 : len(packed) // 2]], None),
    ("broken-mid-deflate", lambda packed: [packed[: len(packed) // 2]], httpx.ReadError("reset")),
    ("broken-before-trailer", lambda packed: [packed[:-8]], httpx.ReadError("reset")),
]


@pytest.mark.parametrize(("path", "headers", "plain", "request_body"), APIS, ids=API_IDS)
@pytest.mark.parametrize(("cut", "parts_of", "error"), CUTS, ids=[c[0] for c in CUTS])
async def test_a_gzip_answer_cut_before_its_end_passes_on_as_it_came_and_is_not_recorded(
    tmp_path,
    path: str,
    headers: dict[str, str],
    plain: bytes,
    request_body: bytes,
    cut: str,
    parts_of: Any,
    error: Exception | None,
):
    parts: list[bytes] = parts_of(gzipped(plain))
    body = UpstreamBody(list(parts), error=error)
    answer = streamed(body, headers={**headers, "content-encoding": "gzip"})
    async with recorder_over(tmp_path, answer) as setup:
        client = await through(setup, path, request_body)
    assert client.body == b"".join(parts)
    assert client.ended == (error is None)  # a broken upstream breaks the client's answer too
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    assert setup.log == [
        f"mock_llm record: {path}: not recorded: the answer's gzip data was cut before its end"
    ]
    assert not setup.out.exists()


# --- hostile upstreams ------------------------------------------------------------------------


HUGE = [
    (CHAT, SSE, b"data: " + b"x" * BIG, "an event-stream line is longer than 8388608 bytes"),
    ("/api/chat", NDJSON, b'{"message": "' + b"x" * BIG, "an NDJSON line is longer than 8388608"),
    ("/v1/responses", SSE, b"data: " + b"x" * BIG, "an event-stream line is longer than"),
]


@pytest.mark.parametrize(("path", "headers", "line", "problem"), HUGE, ids=API_IDS[:3])
async def test_a_line_longer_than_the_recorder_reads_passes_on_and_is_not_recorded(
    tmp_path, key: str, path: str, headers: dict[str, str], line: bytes, problem: str
):
    parts = [line[: BIG // 2], line[BIG // 2 :], b"\n\nmore\n\n"]
    answer = streamed(UpstreamBody(list(parts)), headers=headers)
    async with recorder_over(tmp_path, answer) as setup:
        client = await through(setup, path, ollama_ask(key))
    assert (client.status, client.ended) == (200, True)
    assert client.body == b"".join(parts)
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    [log] = setup.log
    assert log.startswith(f"mock_llm record: {path}: not recorded: {problem}")


async def test_json_nested_too_deep_in_a_stream_is_recorded_as_a_malformed_line(tmp_path, key: str):
    body = OLLAMA_STREAM.replace(b"\n", b"\n" + b"[" * 100_000 + b"\n", 1)
    answer = streamed(UpstreamBody([body]), headers=NDJSON)
    async with recorder_over(tmp_path, answer) as setup:
        client = await through(setup, "/api/chat", ollama_ask(key))
    assert client.body == body
    [step] = recorded(setup)["f"]
    assert step.content == "Nightly at 02:00."
    assert isinstance(step.fault, MalformedFault)
    assert step.fault.after_chunks == 1


async def test_a_character_split_across_reads_is_recorded_whole(tmp_path, key: str):
    body = ndjson(said("Nächtlich 🌙"), said(done=True, done_reason="stop"))
    cut = body.index("🌙".encode()) + 2
    answer = streamed(UpstreamBody([body[:cut], body[cut:]]), headers=NDJSON)
    async with recorder_over(tmp_path, answer) as setup:
        await through(setup, "/api/chat", ollama_ask(key))
    [step] = recorded(setup)["f"]
    assert step.content == "Nächtlich 🌙"
