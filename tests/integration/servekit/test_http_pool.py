"""servekit's pools against an upstream that closes every reused connection (issue 29).

tests/support/stale_upstream.py answers each connection's first request and closes it on the first
bytes of its second, so every request a pool sends on a reused connection meets the race a
real server's keep-alive makes by chance, every time. The pools keep idle connections for
DEADLINE_S here, so reuse is certain; a sequence of requests then alternates exactly (a
fresh connection, pooled; its reuse, lost and retried on a fresh connection that is not
pooled; a fresh one again), and a burst after a burst reuses what the one before pooled.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import aiohttp
import httpx
import pytest

from servekit.httpx_pool import STALE_ERRORS, HttpxPool
from servekit.pool import Pool, RequestFailed

from ...support.deadlines import DEADLINE_S
from ...support.ports import refusing_port
from ...support.stale_upstream import ANSWER, StaleUpstream, serve_stale_upstream

BURSTS, BURST = 2, 10  # the second burst reuses what the first pooled
CHAT = "/v1/chat/completions"


@pytest.fixture
def upstream() -> Iterator[StaleUpstream]:
    with serve_stale_upstream() as served:
        yield served


@pytest.fixture
async def pool() -> AsyncIterator[Pool]:
    pool = Pool(timeout=aiohttp.ClientTimeout(sock_connect=DEADLINE_S), idle_s=DEADLINE_S)
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def httpx_pool() -> AsyncIterator[HttpxPool]:
    pool = HttpxPool(timeout=httpx.Timeout(DEADLINE_S), idle_s=DEADLINE_S)
    try:
        yield pool
    finally:
        await pool.aclose()


async def answered(pool: Pool, url: str) -> str:
    response = await pool.request("POST", url, data=b'{"stream": false}')
    try:
        return (await response.json())["choices"][0]["message"]["content"]
    finally:
        response.release()


async def answered_httpx(pool: HttpxPool, url: str) -> str:
    request = pool.client.build_request("POST", url, content=b'{"stream": false}')
    response = await pool.send(request, stream=True)
    try:
        await response.aread()
        return response.json()["choices"][0]["message"]["content"]
    finally:
        await response.aclose()


# --- aiohttp: servekit.pool.Pool ------------------------------------------------------------------


async def test_aiohttp_alone_loses_a_post_on_a_connection_the_server_closes(
    upstream: StaleUpstream,
):
    """What the guard's and the app's sessions did before issue 29."""
    async with aiohttp.ClientSession() as session, asyncio.timeout(DEADLINE_S):
        async with session.post(upstream.url + CHAT, data=b"{}") as response:
            await response.read()
        with pytest.raises((aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
            await session.post(upstream.url + CHAT, data=b"{}")


async def test_a_request_on_a_connection_the_server_closes_is_answered_on_a_fresh_one(
    upstream: StaleUpstream, pool: Pool
):
    async with asyncio.timeout(DEADLINE_S):
        texts = [await answered(pool, upstream.url + CHAT) for _ in range(20)]

    assert texts == [ANSWER] * 20
    assert (upstream.answered, upstream.dropped, pool.retried) == (20, 10, 10)
    assert pool.idle()


async def test_bursts_that_reuse_the_pool_lose_no_request_and_send_none_twice(
    upstream: StaleUpstream, pool: Pool
):
    async with asyncio.timeout(DEADLINE_S):
        for _ in range(BURSTS):
            texts = await asyncio.gather(
                *(answered(pool, upstream.url + CHAT) for _ in range(BURST))
            )
            assert texts == [ANSWER] * BURST

    assert upstream.answered == BURSTS * BURST  # each request answered once
    assert upstream.dropped == pool.retried >= 1  # the second burst reused, was dropped, sent again
    assert pool.idle()


async def test_a_fresh_connection_the_server_drops_is_not_retried(
    upstream: StaleUpstream, pool: Pool
):
    upstream.answering = False
    async with asyncio.timeout(DEADLINE_S):
        with pytest.raises(RequestFailed) as caught:
            await pool.request("POST", upstream.url + CHAT, data=b"{}")

    assert caught.value.cause == "error=ServerDisconnectedError reused=false"
    assert not caught.value.retried
    assert isinstance(caught.value.__cause__, aiohttp.ServerDisconnectedError)
    assert (upstream.unanswered, pool.retried) == (1, 0)


async def test_a_refused_connect_is_not_retried(pool: Pool):
    with refusing_port() as port:
        async with asyncio.timeout(DEADLINE_S):
            with pytest.raises(RequestFailed) as caught:
                await pool.request("POST", f"http://127.0.0.1:{port}{CHAT}", data=b"{}")

    assert caught.value.cause == "error=ClientConnectorError reused=false"
    assert pool.retried == 0


async def test_a_retry_whose_fresh_connection_is_dropped_too_fails_with_the_retrys_cause(
    upstream: StaleUpstream, pool: Pool
):
    async with asyncio.timeout(DEADLINE_S):
        await answered(pool, upstream.url + CHAT)
        upstream.answering = False  # the pooled connection is stale, and so is every new one
        with pytest.raises(RequestFailed) as caught:
            await pool.request("POST", upstream.url + CHAT, data=b"{}")

    assert (caught.value.cause, caught.value.retried) == (
        "error=ServerDisconnectedError reused=false",
        True,
    )
    assert (upstream.dropped, upstream.unanswered, pool.retried) == (1, 1, 1)
    assert pool.idle()


async def test_a_connection_idle_longer_than_the_pools_idle_time_is_not_reused(
    upstream: StaleUpstream,
):
    pool = Pool(timeout=aiohttp.ClientTimeout(total=None), idle_s=0.05)
    try:
        async with asyncio.timeout(DEADLINE_S):
            await answered(pool, upstream.url + CHAT)
            # The idle time is a clock: let more than it pass (any wait this long will do).
            await asyncio.sleep(0.1)
            await answered(pool, upstream.url + CHAT)
    finally:
        await pool.close()

    assert (upstream.answered, upstream.dropped, pool.retried) == (2, 0, 0)


# --- httpx: servekit.httpx_pool.HttpxPool ---------------------------------------------------------


async def test_httpx_alone_loses_a_post_on_a_connection_the_server_closes(
    upstream: StaleUpstream,
):
    """What the recorder's client did before issue 29: httpx does not retry it."""
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client, asyncio.timeout(DEADLINE_S):
        await client.post(upstream.url + CHAT, content=b"{}")
        with pytest.raises(STALE_ERRORS):
            await client.post(upstream.url + CHAT, content=b"{}")


async def test_httpx_requests_on_connections_the_server_closes_are_answered_on_fresh_ones(
    upstream: StaleUpstream, httpx_pool: HttpxPool
):
    async with asyncio.timeout(DEADLINE_S):
        texts = [await answered_httpx(httpx_pool, upstream.url + CHAT) for _ in range(20)]

    assert texts == [ANSWER] * 20
    assert (upstream.answered, upstream.dropped, httpx_pool.retried) == (20, 10, 10)


async def test_httpx_bursts_that_reuse_the_pool_lose_no_request(
    upstream: StaleUpstream, httpx_pool: HttpxPool
):
    async with asyncio.timeout(DEADLINE_S):
        for _ in range(BURSTS):
            texts = await asyncio.gather(
                *(answered_httpx(httpx_pool, upstream.url + CHAT) for _ in range(BURST))
            )
            assert texts == [ANSWER] * BURST

    assert upstream.answered == BURSTS * BURST
    assert upstream.dropped == httpx_pool.retried >= 1


async def test_httpx_a_fresh_connection_the_server_drops_is_not_retried(
    upstream: StaleUpstream, httpx_pool: HttpxPool
):
    upstream.answering = False
    request = httpx_pool.client.build_request("POST", upstream.url + CHAT, content=b"{}")
    async with asyncio.timeout(DEADLINE_S):
        with pytest.raises(RequestFailed) as caught:
            await httpx_pool.send(request)

    assert caught.value.cause == "error=RemoteProtocolError reused=false"
    assert (upstream.unanswered, httpx_pool.retried) == (1, 0)


async def test_httpx_a_refused_connect_is_not_retried(httpx_pool: HttpxPool):
    with refusing_port() as port:
        request = httpx_pool.client.build_request("POST", f"http://127.0.0.1:{port}{CHAT}")
        async with asyncio.timeout(DEADLINE_S):
            with pytest.raises(RequestFailed) as caught:
                await httpx_pool.send(request)

    assert caught.value.cause == "error=ConnectError reused=false"
    assert httpx_pool.retried == 0
