"""Record through the mock itself, then replay the recording on a second mock.

The upstream is the real mock, wrapped in a tee that keeps every byte it sends and every
header it receives; the recorder runs in-process on a free port in front of it. A client
(raw httpx, or the openai SDK) must get from the recorder exactly what the mock sent, and
a second mock loaded with the recording (`--replay-pacing none`) must send the same chunks,
in the same order, with the same failures. The streams and the faults each go into one
recording, replayed by one mock, each flow checked and named; every built-in stream is
recorded and replayed by the reader itself in tests/unit/mock_llm/record/test_recording.py.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import httpx
import ollama
import openai
import pytest

from mock_llm import build_settings, load_flow_file, parse_flows
from mock_llm.flows.model import CutFault, ErrorEventFault, HttpFault, MalformedFault
from mock_llm.record.recorder import RecorderSettings, Upstream, serve_recorder
from mock_llm.record.redaction import REDACTED, Redactor, compile_patterns
from mock_llm.server.runner import serve_mock

from ...support.cases import check_each_async
from ...support.deadlines import DEADLINE_S, POLL_S
from ...support.ports import refusing_port
from ..conftest import sdk_for
from ..helpers.recording_setup import (
    SECRET_KEY,
    Rec,
    Upstreams,
    again_key,
    ask,
    assert_passed_through,
    counted,
    keys_for,
    post,
    rec,
    upstream,
)

__all__ = ["rec", "upstream"]  # the fixtures, used by name


STREAMED = [
    "clean",
    "scaffold-recover",
    "scaffold-split",
    "scaffold-mixed",
    "partial-tail",
    "thinking",
    "thinking-scaffold",
    "tool-with-scaffold",
    "multi-tool",
    "length",
    "xss",
]


async def test_each_stream_passes_through_unchanged_and_replays_chunk_by_chunk(
    upstream: Upstreams, rec: Rec, key: str
):
    keys = keys_for(key, STREAMED)
    usage = {"include_usage": True}
    originals = {
        flow: await post(rec.url, ask(flow, keys[flow], stream_options=usage)) for flow in STREAMED
    }
    recorded = await rec.saved(len(STREAMED))
    assert sorted(recorded) == sorted(STREAMED)

    async def replays_the_same(flow: str) -> None:
        original = originals[flow]
        assert original.error is None
        assert original.events[-1] == "[DONE]"
        assert_passed_through(upstream, original)
        assert recorded[flow].steps[0].recorded  # its real chunk boundaries
        again = await post(replay, ask(flow, again_key(keys[flow]), stream_options=usage))
        assert again.chunks == original.chunks

    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        await check_each_async(((flow, flow) for flow in STREAMED), replays_the_same)


async def test_the_openai_sdk_reads_the_same_chunks_through_the_recorder_and_the_replay(
    rec: Rec, key: str
):
    async def deltas(url: str, turn: str) -> list[tuple[dict[str, Any], str | None]]:
        async with sdk_for(url) as client, asyncio.timeout(DEADLINE_S):
            stream = await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": f"[[mock:tool-with-scaffold#{turn}]]"}],
                stream=True,
            )
            return [
                (c.choices[0].delta.model_dump(exclude_none=True), c.choices[0].finish_reason)
                async for c in stream
            ]

    original = await deltas(rec.url, key)
    await rec.saved()
    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        again = await deltas(replay, again_key(key))
    assert again == original
    assert original[-1][1] == "tool_calls"
    assert sum(1 for delta, _ in original if "content" in delta) > 5


async def test_a_turn_of_tool_rounds_is_one_flow_and_a_whole_answer_a_whole_step(
    upstream: Upstreams, rec: Rec
):
    """No trigger: the mock plays `default`; the flow is named from the turn's messages."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "When do backups run?"}]
    first = await post(rec.url, {"model": "m", "messages": messages})
    assert_passed_through(upstream, first)
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [_call()]},
        {"role": "tool", "tool_call_id": "c1", "content": "nightly"},
    ]
    second = await post(rec.url, {"model": "m", "messages": messages, "stream": True})
    recorded = await rec.saved(2)
    [(name, flow)] = recorded.items()
    assert name.startswith("rec-")
    assert [bool(s.recorded) for s in flow.steps] == [False, True]
    assert flow.steps[0].content == json.loads(first.body)["choices"][0]["message"]["content"]
    assert "Recorded from" in flow.description
    # a new turn with the same question is a flow of its own
    await post(rec.url, {"model": "m", "messages": messages[:1]})
    assert list(await rec.saved(3)) == [name, f"{name}-2"]
    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        again = await post(replay, {"model": "m", "messages": [*messages, _trigger(name)]})
    assert json.loads(again.body)["choices"][0]["message"]["content"] == (flow.steps[0].content)
    assert second.error is None


def _call() -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}


def _trigger(name: str) -> dict[str, str]:
    return {"role": "user", "content": f"again [[mock:{name}#replayed]]"}


async def test_a_keyed_turn_records_each_request_as_the_next_step(rec: Rec, key: str):
    for _ in range(2):
        await post(rec.url, ask("scaffold-recover", key))  # the recovery resends the question
    recorded = await rec.saved(2)
    steps = recorded["scaffold-recover"].steps
    assert [s.content.startswith("<|tool_call_start|>") for s in steps] == [True, False]
    assert "sgcanary-recover-41f7" in steps[0].content


FAULTS = [
    ("rate-limited", HttpFault, None),
    ("error-then-ok", HttpFault, None),
    ("bad-key", HttpFault, None),
    ("drop-mid-stream", CutFault, "abort"),
    ("cut-eof", CutFault, "eof"),
    ("cut-in-tools", CutFault, "abort"),
    ("error-event", ErrorEventFault, None),
    ("malformed-sse", MalformedFault, None),
]


async def test_each_failure_is_recorded_as_its_fault_and_replays_as_the_same_failure(
    upstream: Upstreams, rec: Rec, key: str
):
    flows = [flow for flow, _, _ in FAULTS]
    keys = keys_for(key, flows)
    originals = {flow: await post(rec.url, ask(flow, keys[flow])) for flow in flows}
    recorded = await rec.saved(len(flows))

    async def replays_the_same(fault: tuple[str, type, str | None]) -> None:
        flow, kind, mode = fault
        original = originals[flow]
        assert_passed_through(upstream, original)
        step = recorded[flow].steps[0]
        assert isinstance(step.fault, kind)
        if isinstance(step.fault, CutFault):
            assert step.fault.mode == mode
            assert isinstance(original.error, httpx.RemoteProtocolError) == (mode == "abort")
        again = await post(replay, ask(flow, again_key(keys[flow])))
        assert again.status == original.status
        assert again.chunks == original.chunks
        assert type(again.error) is type(original.error)
        if isinstance(step.fault, HttpFault):
            assert json.loads(again.body) == json.loads(original.body)
            assert again.headers.get("retry-after") == original.headers.get("retry-after")

    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        await check_each_async(((fault[0], fault) for fault in FAULTS), replays_the_same)


async def test_an_http_fault_keeps_its_retry_after(rec: Rec, key: str):
    await post(rec.url, ask("rate-limited", key))
    fault = (await rec.saved())["rate-limited"].steps[0].fault
    assert fault == HttpFault(
        429,
        "Rate limit reached (mock fault). Please try again later.",
        "rate_limit_exceeded",
        None,
        1.0,
    )


async def test_the_api_key_reaches_the_upstream_but_never_the_recording(
    upstream: Upstreams, rec: Rec, key: str
):
    async with sdk_for(rec.url, api_key=SECRET_KEY) as client:
        with pytest.raises(openai.AuthenticationError):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"[[mock:bad-key#{key}]]"}]
            )
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"[[mock:clean#{key}]]"}]
        )
    sent = [dict(t.request_headers).get("authorization") for t in upstream.tee.seen.values()]
    assert f"Bearer {SECRET_KEY}" in sent
    await rec.saved(2)
    text = rec.out.read_text(encoding="utf-8")
    assert SECRET_KEY not in text
    assert "authorization" not in text.lower()
    assert f"Incorrect API key provided: {REDACTED}." in text


async def test_redaction_replaces_matches_and_keeps_the_chunks(
    upstream: Upstreams, tmp_path: Path, key: str
):
    out = tmp_path / "redacted.yaml"
    redactor = Redactor(compile_patterns([r"restic to the NAS", r"lfm2-\w+"]))
    settings = RecorderSettings(Upstream.parse(f"{upstream.url}/v1"), out, redactor)
    with serve_recorder(settings) as (url, recorder):
        original = await post(url, ask("clean", key))
        await Rec(url, recorder, out).saved()
    text = out.read_text(encoding="utf-8")
    assert "restic" not in text
    assert "lfm2-test" not in text  # the model, in the description
    step = load_flow_file(out)["clean"].steps[0]
    assert f"02:00 with {REDACTED}, and" in step.content
    assert len(step.recorded) == len(original.chunks) - 3  # all but role, finish and [DONE]


async def test_a_gz_recording_is_compressed_and_replays(
    upstream: Upstreams, tmp_path: Path, key: str
):
    out = tmp_path / "recording.yaml.gz"
    settings = RecorderSettings(Upstream.parse(f"{upstream.url}/v1"), out)
    with serve_recorder(settings) as (url, recorder):
        original = await post(url, ask("thinking", key))
        await Rec(url, recorder, out).saved()
    text = gzip.decompress(out.read_bytes()).decode()
    assert list(parse_flows(text, "x")) == ["thinking"]
    with serve_mock(build_settings((out,), replay_pacing=0.0)) as replay:
        again = await post(replay, ask("thinking", again_key(key)))
    assert again.chunks == original.chunks


async def test_recorded_gaps_hold_the_pauses_the_upstream_took(rec: Rec, key: str):
    await post(rec.url, ask("paced", key))
    step = (await rec.saved())["paced"].steps[0]
    assert [c.text for c in step.recorded] == ["one", " two", " three", " four"]
    # the mock paused 25 ms before each chunk: the gaps cannot add up to less
    assert sum(c.after_ms for c in step.recorded) >= 4 * 25 * 0.999


async def test_other_paths_pass_through_and_are_not_recorded(upstream: Upstreams, rec: Rec):
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        through = await http.get(f"{rec.url}/v1/models")
        direct = await http.get(f"{upstream.url}/v1/models")
        missing = await http.get(f"{rec.url}/v1/nothing-here")
    assert (through.status_code, through.json()) == (200, direct.json())
    assert missing.status_code == 404
    assert not rec.out.exists()
    assert (rec.recorder.saved, rec.recorder.skipped) == (0, 0)


async def test_an_unreachable_upstream_is_a_502_and_nothing_is_recorded(tmp_path: Path, key: str):
    with refusing_port() as port:
        settings = RecorderSettings(
            Upstream.parse(f"http://127.0.0.1:{port}/v1"), tmp_path / "r.yaml"
        )
        with serve_recorder(settings) as (url, recorder):
            got = await post(url, ask("clean", key))
    assert got.status == 502
    assert "the upstream cannot be reached" in json.loads(got.body)["error"]["message"]
    assert (recorder.saved, recorder.skipped) == (0, 1)
    assert not (tmp_path / "r.yaml").exists()


async def test_a_client_that_leaves_is_not_recorded_and_the_upstream_sees_it_leave(
    upstream: Upstreams, rec: Rec, key: str
):
    async with (
        asyncio.timeout(DEADLINE_S),
        httpx.AsyncClient(timeout=DEADLINE_S) as http,
        http.stream("POST", f"{rec.url}/v1/chat/completions", json=ask("slow", key)) as response,
    ):
        async for _ in response.aiter_raw():
            break  # the first read, then away
    await counted(rec.recorder, skipped=1)
    assert rec.recorder.saved == 0
    async with httpx.AsyncClient(base_url=upstream.url, timeout=DEADLINE_S) as mock:
        async with asyncio.timeout(DEADLINE_S):
            while True:
                entries = (await mock.get("/_mock/requests", params={"key": key})).json()
                outcomes = [e["outcome"] for e in entries["requests"]]
                if outcomes != ["in_progress"]:
                    break
                await asyncio.sleep(POLL_S)
    assert outcomes == ["client_disconnected"]


async def test_a_recording_replays_over_ollamas_api_piece_by_piece(rec: Rec, key: str):
    original = await post(rec.url, ask("thinking", key))
    step = (await rec.saved())["thinking"].steps[0]
    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        async with (
            asyncio.timeout(DEADLINE_S),
            ollama.AsyncClient(host=replay, timeout=DEADLINE_S) as client,
        ):
            parts = [
                part
                async for part in await client.chat(
                    model="m", messages=ask("thinking", again_key(key))["messages"], stream=True
                )
            ]
    thinking = [p.message.thinking for p in parts if p.message.thinking]
    content = [p.message.content for p in parts if p.message.content]
    assert thinking == [c.text for c in step.recorded if c.part == "reasoning"]
    assert content == [c.text for c in step.recorded if c.part == "content"]
    deltas = [json.loads(event)["choices"][0]["delta"] for event in original.events[:-1]]
    assert content == [delta["content"] for delta in deltas if delta.get("content")]
