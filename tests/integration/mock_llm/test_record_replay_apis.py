"""Record Ollama's API and the Responses API through the recorder in front of the mock,
then replay the recording on a second mock, in every wire format.

The clients are the official ones (the `ollama` client, the openai SDK's `responses`) for
answers; a failure is read by raw httpx, which reads a body to its end whatever it holds (a
client that gives up mid-answer leaves it unrecorded, by design). A replay must send what
the mock sent for the original flow, in the format it was recorded from and in the other
two (a step is format-neutral), ids and timestamps aside: from Ollama, whose tool calls
come whole, with each call's arguments in one piece.

Over HTTP, one flow of each outcome class is recorded (played_flows.SAMPLED), and each
fault kind; every built-in step is recorded from each format and replayed in every format
by the readers themselves in tests/unit/mock_llm/record/test_recording_formats.py. The
exchanges of one test go into one recording, replayed by one mock, each checked and named.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from mock_llm import build_settings, load_flow_file
from mock_llm.flows.model import CutFault, ErrorEventFault, HttpFault, MalformedFault
from mock_llm.play.response_plan import Api
from mock_llm.record.recorder import Recorder, RecorderSettings, Upstream, recorder_config
from mock_llm.server.runner import serve_mock
from servekit.in_thread import serve_in_thread

from ...support.cases import check_each_async
from ...support.deadlines import DEADLINE_S
from ..conftest import sdk_for
from ..helpers.played_flows import FLOWS, SAMPLED
from ..helpers.recording_setup import (
    SECRET_KEY,
    Raw,
    Rec,
    Upstreams,
    assert_passed_through,
    counted,
    keys_for,
    post,
    rec,
    upstream,
)

__all__ = ["rec", "upstream"]  # the fixtures, used by name

RECORDED: list[Api] = ["ollama", "responses"]
FORMATS: list[Api] = ["openai", "ollama", "responses"]
PATHS: dict[Api, str] = {
    "openai": "/v1/chat/completions",
    "ollama": "/api/chat",
    "responses": "/v1/responses",
}


def question(flow: str, key: str) -> str:
    return f"When do backups run? [[mock:{flow}#{key}]]"


def body(api: Api, flow: str, key: str, *, stream: bool = True) -> dict[str, Any]:
    if api == "responses":
        return {"model": "m", "input": question(flow, key), "stream": stream}
    messages = [{"role": "user", "content": question(flow, key)}]
    return {"model": "m", "messages": messages, "stream": stream}


def turn_key(key: str, tag: str) -> str:
    """Another KEY of the same length (usage counts count the question's characters)."""
    return tag + key[len(tag) :]


async def played(url: str, api: Api, flow: str, key: str) -> Raw:
    """A flow's first step as `api` sends it, byte for byte."""
    return await post(url, body(api, flow, key), path=PATHS[api])


_IDS = re.compile(rb"mock\d+")
_CREATED = re.compile(rb'"(created|created_at)":("[^"]*"|\d+)')


def frames(api: Api, raw: bytes) -> list[Any]:
    """A body's frames (lines, or SSE events), parsed where they are JSON, with the ids and
    times that differ between two servers made equal."""
    text = _CREATED.sub(rb'"\1":0', _IDS.sub(b"mockN", raw)).decode()
    parts = text.splitlines() if api == "ollama" else text.split("\n\n")
    out: list[Any] = []
    for part in filter(None, parts):
        data = (
            part
            if api == "ollama"
            else "\n".join(
                line.removeprefix("data: ")
                for line in part.splitlines()
                if line.startswith("data: ")
            )
        )
        try:
            out.append(json.loads(data))
        except ValueError:
            out.append(data)
    return out


def whole_arguments(api: Api, items: list[Any]) -> list[Any]:
    """`items` with each tool call's argument slices joined into its first (a recording from
    Ollama has each call's arguments whole), the Responses events numbered again."""
    out: list[Any] = []
    first: dict[object, dict[str, Any]] = {}
    for item in items:
        if api == "openai" and isinstance(item, dict) and item.get("choices"):
            [call] = item["choices"][0]["delta"].get("tool_calls") or [None]
            if call is not None and "id" not in call:
                first[call["index"]]["function"]["arguments"] += call["function"]["arguments"]
                continue
            if call is not None:
                first[call["index"]] = call
        if isinstance(item, dict) and item.get("type") == "response.function_call_arguments.delta":
            if item["item_id"] in first:
                first[item["item_id"]]["delta"] += item["delta"]
                continue
            first[item["item_id"]] = item
        out.append(item)
    for number, item in enumerate(out):
        if api == "responses" and isinstance(item, dict) and "sequence_number" in item:
            item["sequence_number"] = number
    return out


async def replayed_everywhere(
    upstream: Upstreams, replay: str, source: Api, flow: str, key: str
) -> None:
    """The mock at `replay` plays its recording of `flow` in every format as the upstream
    mock plays the flow there."""
    for tag, api in zip("xyz", FORMATS, strict=True):
        original = await played(upstream.url, api, flow, turn_key(key, tag + "o"))
        again = await played(replay, api, flow, turn_key(key, tag + "r"))
        assert again.status == original.status, api
        want, got = frames(api, original.body), frames(api, again.body)
        if source == "ollama" and api != "ollama":
            want, got = whole_arguments(api, want), whole_arguments(api, got)
        assert got == want, api
        assert type(again.error) is type(original.error), api


async def record_with_client(url: str, api: Api, flow: str, key: str) -> None:
    """One streamed answer through the official client of `api`, read to its end."""
    async with asyncio.timeout(DEADLINE_S):
        if api == "ollama":
            async with ollama.AsyncClient(host=url, timeout=DEADLINE_S) as client:
                messages = body(api, flow, key)["messages"]
                async for _ in await client.chat(model="m", messages=messages, stream=True):
                    pass
            return
        async with sdk_for(url) as sdk:
            async for _ in await sdk.responses.create(
                model="m", input=question(flow, key), stream=True
            ):
                pass


@pytest.mark.parametrize("source", RECORDED)
async def test_answers_recorded_from_an_official_client_replay_the_same_in_every_format(
    upstream: Upstreams, rec: Rec, key: str, source: Api
):
    keys = keys_for(key, SAMPLED)
    for flow in SAMPLED:
        await record_with_client(rec.url, source, flow, keys[flow])
    recorded = await rec.saved(len(SAMPLED))
    assert sorted(recorded) == SAMPLED

    async def replays_the_same(flow: str) -> None:
        step = recorded[flow].steps[0]
        assert step.recorded or not (step.content or step.reasoning or step.tool_calls)
        await replayed_everywhere(upstream, replay, source, flow, keys[flow])

    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        await check_each_async(((flow, flow) for flow in SAMPLED), replays_the_same)


FAULTS = [
    ("rate-limited", HttpFault),
    ("error-then-ok", HttpFault),
    ("bad-key", HttpFault),
    ("drop-mid-stream", CutFault),
    ("cut-eof", CutFault),
    ("cut-in-tools", CutFault),
    ("error-event", ErrorEventFault),
    ("malformed-sse", MalformedFault),
    ("short-stall", type(None)),  # a silence is no fault: the gap before the next chunk
]


@pytest.mark.parametrize("source", RECORDED)
async def test_each_failure_passes_through_is_recorded_as_its_fault_and_replays_the_same(
    upstream: Upstreams, rec: Rec, key: str, source: Api
):
    flows = [flow for flow, _ in FAULTS]
    keys = keys_for(key, flows)
    originals = {flow: await played(rec.url, source, flow, keys[flow]) for flow in flows}
    recorded = await rec.saved(len(flows))

    async def replays_the_same(case: tuple[str, type]) -> None:
        flow, kind = case
        original = originals[flow]
        assert_passed_through(upstream, original)
        assert isinstance(recorded[flow].steps[0].fault, kind)
        again = await played(replay, source, flow, turn_key(keys[flow], "r"))
        assert again.status == original.status
        assert frames(source, again.body) == frames(source, original.body)
        assert type(again.error) is type(original.error)
        assert again.headers.get("retry-after") == original.headers.get("retry-after")

    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        await check_each_async(((flow, (flow, kind)) for flow, kind in FAULTS), replays_the_same)


async def test_a_silence_is_recorded_as_the_gap_before_the_next_chunk(rec: Rec, key: str):
    await played(rec.url, "ollama", "short-stall", key)
    step = (await rec.saved())["short-stall"].steps[0]
    assert step.fault is None
    # the mock paused 50 ms after 3 lines: the gaps, which add up to the last line's arrival,
    # cannot add up to less (a bound a slow machine only ever exceeds)
    assert sum(c.after_ms for c in step.recorded) >= 50 * 0.999


@pytest.mark.parametrize("source", RECORDED)
async def test_a_turns_later_request_is_the_next_step_of_its_flow(
    upstream: Upstreams, rec: Rec, key: str, source: Api
):
    """tool-then-answer: a tool call, then (with the tool's result) the answer."""
    first = await played(rec.url, source, "tool-then-answer", key)
    second = await played(rec.url, source, "tool-then-answer", key)
    steps = (await rec.saved(2))["tool-then-answer"].steps
    assert [bool(s.tool_calls) for s in steps] == [True, False]
    assert steps[1].content == FLOWS["tool-then-answer"].steps[1].content
    with serve_mock(build_settings((rec.out,), replay_pacing=0.0)) as replay:
        again = [await played(replay, source, "tool-then-answer", key) for _ in range(2)]
    assert [frames(source, r.body) for r in again] == [
        frames(source, r.body) for r in (first, second)
    ]


@pytest.mark.parametrize("source", RECORDED)
async def test_the_api_key_reaches_the_upstream_but_never_the_recording(
    upstream: Upstreams, rec: Rec, key: str, source: Api
):
    headers = {"authorization": f"Bearer {SECRET_KEY}"}
    refused = await post(rec.url, body(source, "bad-key", key), headers, PATHS[source])
    assert refused.status == 401
    sent = [dict(t.request_headers).get("authorization") for t in upstream.tee.seen.values()]
    assert f"Bearer {SECRET_KEY}" in sent
    await rec.saved()
    text = rec.out.read_text(encoding="utf-8")
    assert SECRET_KEY not in text
    assert "Incorrect API key provided: [REDACTED]." in text


async def test_a_whole_answer_of_each_api_is_recorded_whole_and_replays(rec: Rec, key: str):
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        for api in RECORDED:
            whole = body(api, "thinking", turn_key(key, api[0]), stream=False)
            got = await http.post(f"{rec.url}{PATHS[api]}", json=whole)
            assert got.status_code == 200
    flows = await rec.saved(2)
    assert [f.steps[0].recorded for f in flows.values()] == [(), ()]
    assert {f.steps[0].reasoning for f in flows.values()} == {FLOWS["thinking"].steps[0].reasoning}


# --- hostile upstreams ----------------------------------------------------------------------

HOSTILE: dict[Api, tuple[bytes, list[bytes]]] = {
    "ollama": (b"application/x-ndjson", [b'{"message": {"content": "' + b"x" * (9 << 20), b"\n"]),
    "openai": (
        b"text/event-stream",
        [b'data: {"choices": [{"delta": {"content": "caf\xc3', b'\xa9"}}]}\n\ndata: [DONE]\n\n'],
    ),
    "responses": (
        b"text/event-stream",
        [b"data: " + b"[" * 200_000 + b"\n\n", b'data: {"type": "response.completed"}\n\n'],
    ),
}
"""What the hostile upstream answers for each API, write by write: a line past the readers'
8 MiB, a character split across writes, JSON nested past the parser."""


async def hostile_app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    api: Api = next(api for api, path in PATHS.items() if path == scope["path"])
    content_type, parts = HOSTILE[api]
    start = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", content_type)],
    }
    await send(start)
    for part in parts:
        await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[tuple[str, Recorder]]:
    config = uvicorn.Config(hostile_app, log_level="warning", lifespan="off")
    with serve_in_thread(config) as upstream_url:
        settings = RecorderSettings(Upstream.parse(f"{upstream_url}/v1"), tmp_path / "r.yaml")
        recorder = Recorder(settings)
        with serve_in_thread(recorder_config(recorder)) as url:
            yield url, recorder


async def test_a_hostile_upstream_passes_its_bytes_on_and_the_recorder_stays_up(
    hostile: tuple[str, Recorder], key: str
):
    url, recorder = hostile
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        for api, (_, parts) in HOSTILE.items():
            got = await http.post(f"{url}{PATHS[api]}", json=body(api, api, key))
            assert (got.status_code, got.content) == (200, b"".join(parts))
    await counted(recorder, saved=2, skipped=1)
    flows = load_flow_file(recorder.settings.out)
    assert list(flows) == ["openai", "responses"]  # Ollama's line was too long to read
    assert (flows["openai"].steps[0].content, flows["openai"].steps[0].fault) == ("café", None)
    assert isinstance(flows["responses"].steps[0].fault, MalformedFault)
