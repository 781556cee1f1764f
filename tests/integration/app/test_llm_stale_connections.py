"""The app's model client, and the app, against an upstream that closes every reused
connection (issue 29).

tests/support/stale_upstream.py answers each connection's first request and closes it on the first
bytes of its second: every request the client sends on a pooled connection meets the race
a real server's keep-alive makes by chance. The client sends such a request again at once
on a fresh connection, silently: outside `max_attempts` (1 here, so a stale connection that
counted as an attempt would fail the turn), with no RetryNotice, no `retry` frame and no
wait. A fresh connection that fails is the retry layer's, as before: one attempt, one
notice. The client keeps idle connections for DEADLINE_S here, so reuse is certain.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from scaffold_guard.app.errors import LLMError
from scaffold_guard.app.rag.llm import LLMConfig, UpstreamClient, chat_stream_retried
from scaffold_guard.app.rag.llm.errors import MSG_UNREACHABLE
from scaffold_guard.app.rag.types import ChatMessage, RetryNotice, RoundEnd, StreamPiece
from servekit.pool import RequestFailed

from ...support.deadlines import DEADLINE_S
from ...support.servers import app_settings, serve_app
from ...support.sse import ask
from ...support.stale_upstream import ANSWER, StaleUpstream, serve_stale_upstream

BURSTS, BURST = 2, 10  # the second burst reuses what the first pooled
MESSAGES: list[ChatMessage] = [{"role": "user", "content": "When do backups run?"}]


class Sleeps:
    """An injected sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def upstream() -> Iterator[StaleUpstream]:
    with serve_stale_upstream() as served:
        yield served


def config_for(upstream: StaleUpstream, **overrides: Any) -> LLMConfig:
    settings: dict[str, Any] = {
        "base_url": f"{upstream.url}/v1",
        "model": "m",
        "max_attempts": 1,
        "pool_idle_s": DEADLINE_S,
    }
    return LLMConfig(**(settings | overrides))


@pytest.fixture
async def client(upstream: StaleUpstream) -> AsyncIterator[UpstreamClient]:
    async with UpstreamClient(config_for(upstream)) as client:
        yield client


async def turn(
    client: UpstreamClient, config: LLMConfig, sleeps: Sleeps
) -> tuple[list[object], LLMError | None]:
    """What one retried model request yields, and the error that ended it, if one did."""
    items: list[object] = []
    try:
        async for item in chat_stream_retried(client, config, MESSAGES, None, sleep=sleeps):
            items.append(item)
    except LLMError as error:
        return items, error
    return items, None


def answered(items: list[object]) -> bool:
    """Exactly the answer's text and one end: no notice, nothing else."""
    text = "".join(i.text for i in items if isinstance(i, StreamPiece) and i.kind == "content")
    return (
        text == ANSWER
        and isinstance(items[-1], RoundEnd)
        and not any(isinstance(i, RetryNotice) for i in items)
    )


async def test_every_request_on_a_connection_the_server_closes_is_answered_without_a_notice(
    upstream: StaleUpstream, client: UpstreamClient
):
    config, sleeps = config_for(upstream), Sleeps()
    async with asyncio.timeout(DEADLINE_S):
        results = [await turn(client, config, sleeps) for _ in range(20)]

    assert [error for _, error in results] == [None] * 20
    assert all(answered(items) for items, _ in results)
    assert (upstream.answered, upstream.dropped, client.pool.retried) == (20, 10, 10)
    assert sleeps.delays == []
    assert client.idle()


async def test_bursts_that_reuse_the_pool_lose_no_request_and_wait_for_nothing(
    upstream: StaleUpstream, client: UpstreamClient
):
    config, sleeps = config_for(upstream), Sleeps()
    async with asyncio.timeout(DEADLINE_S):
        for _ in range(BURSTS):
            results = await asyncio.gather(*(turn(client, config, sleeps) for _ in range(BURST)))
            assert [error for _, error in results] == [None] * BURST
            assert all(answered(items) for items, _ in results)

    assert upstream.answered == BURSTS * BURST  # each answered once: none sent twice
    assert upstream.dropped == client.pool.retried >= 1  # reused, dropped, sent again
    assert sleeps.delays == []
    assert client.idle()


async def test_a_fresh_connection_the_server_drops_is_the_retry_layers_one_attempt(
    upstream: StaleUpstream, client: UpstreamClient
):
    """Not a stale connection: the pool sends it once, and the retry layer's budget, its
    notice and its wait are the ones there always were."""
    upstream.answering = False
    config, sleeps = config_for(upstream, max_attempts=2), Sleeps()
    async with asyncio.timeout(DEADLINE_S):
        items, error = await turn(client, config, sleeps)

    assert error is not None
    assert error.message == MSG_UNREACHABLE
    assert isinstance(error.__cause__, RequestFailed)  # the log's error= and reused= fields
    assert isinstance(error.__cause__.error, aiohttp.ServerDisconnectedError)
    assert not error.__cause__.reused
    assert [i.reason for i in items if isinstance(i, RetryNotice)] == ["connection failed"]
    assert len(sleeps.delays) == 1
    assert (upstream.unanswered, client.pool.retried) == (2, 0)  # one request an attempt


async def test_a_retry_the_server_drops_too_fails_the_attempt_as_unreachable(
    upstream: StaleUpstream, client: UpstreamClient
):
    config, sleeps = config_for(upstream), Sleeps()
    async with asyncio.timeout(DEADLINE_S):
        first, _ = await turn(client, config, sleeps)
        upstream.answering = False  # the pooled connection is stale, and so is every new one
        items, error = await turn(client, config, sleeps)

    assert answered(first)
    assert error is not None
    assert error.message == MSG_UNREACHABLE
    assert items == []
    assert (upstream.dropped, upstream.unanswered, client.pool.retried) == (1, 1, 1)
    assert client.idle()


async def test_the_apps_turns_on_connections_the_server_closes_show_no_retry_frame(
    upstream: StaleUpstream, tmp_path: Path
):
    env = {"SG_LLM_MAX_ATTEMPTS": "1", "SG_LLM_POOL_IDLE_S": str(DEADLINE_S)}
    with serve_app(app_settings(upstream.url, tmp_path, **env)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as app:
            turns = [await ask(app, "When do backups run?") for _ in range(6)]
            turns += await asyncio.gather(*(ask(app, "When do backups run?") for _ in range(6)))

    for one in turns:
        assert [f["type"] for f in one.frames if f["type"] in ("retry", "error", "done")] == [
            "done"
        ]
        assert one.text == ANSWER
    assert upstream.dropped >= 3  # sequential turns alternate: fresh, stale, fresh, ...
