"""The recorder (`python -m mock_llm record`) in front of a hostile upstream (issue 27).

The recorder is transparent: whatever the upstream sends, its client gets the same bytes,
as they came. What it records is bounded: an answer past a bound (a line over 8 MiB, more
than `max_recorded_chunks` pieces, more than `max_recorded_bytes` decoded, a gzip bomb
whether the client asked for gzip or not) is passed on unrecorded, its log line saying
why; what it can read (invalid UTF-8 as U+FFFD, a split character, choice 0 of 10,000) is
recorded. A normal exchange beside a hostile one is recorded as if alone. The chunk and body
bounds are made small here, and each answer only as big as its case needs (a line just past
the 8 MiB line bound, a bomb just past the body bound, 1,000 choices: tests/unit/mock_llm/
record/test_recording_formats.py reads 10,000); benchmarks/hostile_clients.py plays them at
full size (a 50 MB line, a 1 GiB bomb, 10,000 choices) and measures the defaults' memory.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest

from mock_llm.flows.model import Step
from mock_llm.record.recorder import (
    NOT_UTF8,
    Recorder,
    RecorderSettings,
    Upstream,
    recorder_config,
)
from servekit.in_thread import serve_in_thread
from servekit.sse import DEFAULT_MAX_LINE_BYTES

from ...support.deadlines import DEADLINE_S
from ...support.hostile_upstream import (
    CLEAN_ANSWER,
    INVALID_SHOWN,
    LONG_COMMENT,
    SPLIT_TEXT,
    HostileUpstream,
    MiB,
    Script,
    ending,
    gzip_bomb,
    long_line,
    many_choices,
    serve_hostile_upstream,
)

SMALL_CHUNKS = 1000
SMALL_BYTES = DEFAULT_MAX_LINE_BYTES + MiB  # so a long line meets the line bound first
SCRIPTS = {
    **ending(2 * SMALL_CHUNKS, (SMALL_BYTES >> 20) + 1),
    "long-line": Script(partial(long_line, total=DEFAULT_MAX_LINE_BYTES + MiB // 2)),
    "many-choices": Script(partial(many_choices, count=1000)),
    # comment lines of 1 KiB, not 14 bytes: as many bytes, a seventieth of the lines to read
    "gzip-bomb": Script(partial(gzip_bomb, LONG_COMMENT, (SMALL_BYTES >> 20) + 1), gzip=True),
}
SKIPPED = {
    "long-line": f"an event-stream line is longer than {DEFAULT_MAX_LINE_BYTES} bytes",
    "opener": f"the answer has more than {SMALL_CHUNKS} chunks",
    "gzip-bomb": f"the answer is longer than {SMALL_BYTES} bytes",
}
RECORDED = {
    "invalid-utf8": INVALID_SHOWN,
    "split-character": SPLIT_TEXT,
    "many-choices": CLEAN_ANSWER,
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[HostileUpstream]:
    with serve_hostile_upstream(SCRIPTS) as served:
        yield served


class Served:
    def __init__(self, url: str, recorder: Recorder, log: list[str]) -> None:
        self.url, self.recorder, self.log = url, recorder, log


@pytest.fixture
def served(upstream: HostileUpstream, tmp_path: Path) -> Iterator[Served]:
    log: list[str] = []
    settings = RecorderSettings(
        Upstream.parse(f"{upstream.url}/v1"),
        tmp_path / "recording.yaml",
        log=log.append,
        max_recorded_bytes=SMALL_BYTES,
        max_recorded_chunks=SMALL_CHUNKS,
    )
    recorder = Recorder(settings)
    with serve_in_thread(recorder_config(recorder)) as url:
        yield Served(url, recorder, log)


@pytest.fixture
async def client(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.url, timeout=DEADLINE_S) as http:
        yield http


def chat(case: str | None) -> dict[str, object]:
    text = "[[mock:normal]]" if case is None else f"[[mock:{case}]] [[hostile:{case}]]"
    return {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}


async def exchange(client: httpx.AsyncClient, case: str | None, accept: str = "gzip") -> str:
    """The sha256 of the raw body the client got for `case`'s question."""
    digest = hashlib.sha256()
    headers = {"accept-encoding": accept}
    async with (
        asyncio.timeout(DEADLINE_S),
        client.stream("POST", "/v1/chat/completions", json=chat(case), headers=headers) as answer,
    ):
        assert answer.status_code == 200
        async for raw in answer.aiter_raw():
            digest.update(raw)
    return digest.hexdigest()


def recorded(served: Served, name: str, saved: int = 1) -> Step:
    assert served.recorder.wait_for(saved=saved, timeout_s=DEADLINE_S)
    return served.recorder.recording.flows[name].steps[-1]


@pytest.mark.parametrize("case", sorted(SCRIPTS))
async def test_the_client_gets_the_upstreams_bytes_as_they_came(
    client: httpx.AsyncClient, upstream: HostileUpstream, case: str
) -> None:
    got = await exchange(client, case)

    assert await asyncio.to_thread(upstream.ended[case].wait, DEADLINE_S)
    assert got == upstream.digest[case]


@pytest.mark.parametrize("case", sorted(SKIPPED))
async def test_an_answer_past_a_bound_is_passed_on_but_not_recorded_and_the_log_says_why(
    client: httpx.AsyncClient, served: Served, case: str
) -> None:
    await exchange(client, case)

    assert await asyncio.to_thread(served.recorder.wait_for, skipped=1, timeout_s=DEADLINE_S)
    assert served.recorder.recording.flows == {}
    assert served.log == [f"mock_llm record: /v1/chat/completions: not recorded: {SKIPPED[case]}"]


async def test_a_gzip_bomb_the_client_did_not_ask_for_is_passed_on_but_not_recorded(
    client: httpx.AsyncClient, served: Served, upstream: HostileUpstream
) -> None:
    got = await exchange(client, "gzip-bomb", accept="identity")

    assert await asyncio.to_thread(served.recorder.wait_for, skipped=1, timeout_s=DEADLINE_S)
    assert got == upstream.digest["gzip-bomb"]
    assert served.recorder.recording.flows == {}


@pytest.mark.parametrize("case", sorted(RECORDED))
async def test_an_answer_the_recorder_can_read_is_recorded_as_choice_0_said_it(
    client: httpx.AsyncClient, served: Served, case: str
) -> None:
    await exchange(client, case)

    step = await asyncio.to_thread(recorded, served, case)
    assert (step.content, step.finish_reason, step.fault) == (RECORDED[case], "stop", None)


async def test_the_log_line_of_a_stream_with_invalid_utf8_says_so(
    client: httpx.AsyncClient, served: Served
) -> None:
    await exchange(client, "invalid-utf8")

    await asyncio.to_thread(recorded, served, "invalid-utf8")
    assert served.log == [f"mock_llm record: invalid-utf8 step 1: 1 chunks, stop{NOT_UTF8}"]


@pytest.mark.parametrize("case", sorted(SCRIPTS))
async def test_a_concurrent_normal_exchange_is_recorded_as_if_alone(
    client: httpx.AsyncClient, served: Served, upstream: HostileUpstream, case: str
) -> None:
    _, normal = await asyncio.gather(exchange(client, case), exchange(client, None))

    step = await asyncio.to_thread(recorded, served, "normal", 1 + (case in RECORDED))
    assert (step.content, step.finish_reason, step.fault) == (CLEAN_ANSWER, "stop", None)
    assert normal == upstream.digest["clean"]
