"""The recorder (`python -m mock_llm record`) in front of an upstream that closes every
reused connection (issue 29).

httpx alone loses such a request, a POST as a GET (tests/integration/servekit/test_http_pool.py
shows it); the recorder sends it again on a fresh connection, so bursts of passed-on
requests and a sequence of recorded chat completions lose nothing, and each exchange is
recorded once. A fresh connection that is dropped is still the client's 502, unrecorded,
naming the cause. The recorder keeps idle upstream connections for DEADLINE_S here, so
reuse is certain; its own server keeps the test client's connections as long, so the
client's hop never meets the race.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from mock_llm.record.recorder import Recorder, RecorderSettings, Upstream, recorder_config
from servekit.in_thread import serve_in_thread

from ...support.deadlines import DEADLINE_S
from ...support.stale_upstream import ANSWER, StaleUpstream, serve_stale_upstream

BURSTS, BURST = 2, 10  # the second burst reuses what the first pooled
CHAT = {"model": "m", "messages": [{"role": "user", "content": "When do backups run?"}]}


@pytest.fixture
def upstream() -> Iterator[StaleUpstream]:
    with serve_stale_upstream() as served:
        yield served


@pytest.fixture
def recorder(upstream: StaleUpstream, tmp_path: Path) -> Iterator[tuple[str, Recorder]]:
    settings = RecorderSettings(
        Upstream.parse(f"{upstream.url}/v1"),
        tmp_path / "recording.yaml",
        upstream_idle_s=DEADLINE_S,
    )
    recorder = Recorder(settings)
    config = recorder_config(recorder)
    config.timeout_keep_alive = int(DEADLINE_S)
    with serve_in_thread(config) as url:
        yield url, recorder


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        yield session


async def test_bursts_of_passed_on_posts_lose_nothing_and_send_nothing_twice(
    upstream: StaleUpstream, recorder: tuple[str, Recorder], client: aiohttp.ClientSession
):
    url, proxy = recorder

    async def embedded() -> object:
        async with client.post(url + "/v1/embeddings", json={"input": "x"}) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async with asyncio.timeout(DEADLINE_S):
        for _ in range(BURSTS):
            bodies = await asyncio.gather(*(embedded() for _ in range(BURST)))
            assert bodies == [{"object": "list", "data": []}] * BURST

    assert upstream.answered == BURSTS * BURST
    assert upstream.dropped == proxy.pool.retried >= 1  # reused, dropped, sent again


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_chat_completions_on_connections_the_server_closes_are_each_recorded_once(
    upstream: StaleUpstream,
    recorder: tuple[str, Recorder],
    client: aiohttp.ClientSession,
    stream: bool,
):
    url, proxy = recorder
    async with asyncio.timeout(DEADLINE_S):
        for _ in range(6):
            body = CHAT | {"stream": stream}
            async with client.post(url + "/v1/chat/completions", json=body) as response:
                assert response.status == 200
                assert ANSWER in await response.text()
    assert await asyncio.to_thread(proxy.wait_for, saved=6, timeout_s=DEADLINE_S)

    assert (upstream.answered, upstream.dropped, proxy.pool.retried) == (6, 3, 3)
    assert proxy.skipped == 0


async def test_a_fresh_connection_the_upstream_drops_is_a_502_naming_its_cause_unrecorded(
    upstream: StaleUpstream, recorder: tuple[str, Recorder], client: aiohttp.ClientSession
):
    url, proxy = recorder
    upstream.answering = False
    async with asyncio.timeout(DEADLINE_S):
        async with client.post(url + "/v1/chat/completions", json=CHAT) as response:
            assert response.status == 502
            message = json.loads(await response.text())["error"]["message"]
    assert await asyncio.to_thread(proxy.wait_for, skipped=1, timeout_s=DEADLINE_S)

    assert "the upstream cannot be reached (error=RemoteProtocolError reused=false)" in message
    assert (upstream.unanswered, proxy.pool.retried, proxy.saved) == (1, 0, 0)
