"""The guard proxy in front of an upstream that closes every reused connection (issue 29).

tests/support/stale_upstream.py answers each connection's first request and closes it on the first
bytes of its second: every upstream request the proxy sends on a pooled connection meets
the race a real server's keep-alive makes by chance. Through every guarded route, streamed
and whole, and a passed-on request, two bursts of concurrent requests (the second after the
first has ended, so it reuses what the first pooled, and the upstream drops those) lose
nothing, no request is sent twice, and the retry is never a recovery. The race is certain,
so two bursts prove it; the volume (bursts of 200 at a real server's keep-alive, every
route) is `uv run python benchmarks/stale_connections.py`. A fresh connection that is
refused or dropped is still the route's 502, not retried, and the log line names its cause.
The proxy keeps idle upstream connections for DEADLINE_S here, so reuse is certain; its own
server keeps the test client's connections as long, so the client's hop never meets the
race.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import uvicorn

from guard.http.server import GuardSettings, create_app
from guard.http.upstream import CUT_OFF, UNREACHABLE
from servekit.in_thread import serve_in_thread

from ...support.deadlines import DEADLINE_S
from ...support.ports import refusing_port
from ...support.stale_upstream import ANSWER, StaleUpstream, serve_stale_upstream

BURSTS, BURST = 2, 10  # the second burst reuses what the first pooled
MESSAGES = [{"role": "user", "content": "When do backups run?"}]
MARKUP = "<|tool_call_start|>[read(path='/homelab/backups.md')]<|tool_call_end|>"
LINE = re.compile(r"guard: (\S+) status=(\d+)( error=\S+ reused=\S+)? stream=\S+ retries=(\d+) ")

Reader = Callable[[aiohttp.ClientResponse], Awaitable[str]]


async def chat_stream_text(response: aiohttp.ClientResponse) -> str:
    texts, done = [], False
    for line in (await response.text()).splitlines():
        if line == "data: [DONE]":
            done = True
        elif line.startswith("data: "):
            delta = json.loads(line[6:])["choices"][0]["delta"]
            texts.append(delta.get("content") or "")
    assert done
    return "".join(texts)


async def chat_whole_text(response: aiohttp.ClientResponse) -> str:
    return (await response.json())["choices"][0]["message"]["content"]


async def responses_stream_text(response: aiohttp.ClientResponse) -> str:
    events = [
        json.loads(line[6:])
        for line in (await response.text()).splitlines()
        if line.startswith("data: ")
    ]
    assert events[-1]["type"] == "response.completed"
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


async def responses_whole_text(response: aiohttp.ClientResponse) -> str:
    return (await response.json())["output"][0]["content"][0]["text"]


async def messages_stream_text(response: aiohttp.ClientResponse) -> str:
    events = [
        json.loads(line[6:])
        for line in (await response.text()).splitlines()
        if line.startswith("data: ")
    ]
    assert events[-1]["type"] == "message_stop"
    return "".join(e["delta"].get("text", "") for e in events if "delta" in e)


async def messages_whole_text(response: aiohttp.ClientResponse) -> str:
    return (await response.json())["content"][0]["text"]


async def ollama_stream_text(response: aiohttp.ClientResponse) -> str:
    lines = [json.loads(line) for line in (await response.text()).splitlines()]
    assert lines[-1]["done"] is True
    return "".join(line["message"]["content"] for line in lines)


async def ollama_whole_text(response: aiohttp.ClientResponse) -> str:
    return (await response.json())["message"]["content"]


@dataclass(frozen=True)
class Route:
    log_name: str
    path: str
    body: dict[str, Any]
    read: Reader


ROUTES = {
    "chat-stream": Route("chat", "/v1/chat/completions",
                         {"model": "m", "stream": True, "messages": MESSAGES}, chat_stream_text),
    "chat-whole": Route("chat", "/v1/chat/completions",
                        {"model": "m", "messages": MESSAGES}, chat_whole_text),
    "responses-stream": Route("responses", "/v1/responses",
                              {"model": "m", "stream": True, "input": "When do backups run?"},
                              responses_stream_text),
    "responses-whole": Route("responses", "/v1/responses",
                             {"model": "m", "input": "When do backups run?"},
                             responses_whole_text),
    "messages-stream": Route("messages", "/v1/messages",
                             {"model": "m", "max_tokens": 9, "stream": True, "messages": MESSAGES},
                             messages_stream_text),
    "messages-whole": Route("messages", "/v1/messages",
                            {"model": "m", "max_tokens": 9, "messages": MESSAGES},
                            messages_whole_text),
    "ollama-stream": Route("ollama-chat", "/api/chat",
                           {"model": "m", "messages": MESSAGES}, ollama_stream_text),
    "ollama-whole": Route("ollama-chat", "/api/chat",
                          {"model": "m", "stream": False, "messages": MESSAGES},
                          ollama_whole_text),
}  # fmt: skip


@pytest.fixture
def upstream() -> Iterator[StaleUpstream]:
    with serve_stale_upstream() as served:
        yield served


@contextmanager
def serving_proxy(upstream_url: str) -> Generator[str]:
    settings = GuardSettings(upstream=upstream_url, pool_idle_s=DEADLINE_S)
    config = uvicorn.Config(
        create_app(settings), log_level="warning", timeout_keep_alive=int(DEADLINE_S)
    )
    with serve_in_thread(config) as url:
        yield url


@pytest.fixture
def proxy_url(upstream: StaleUpstream) -> Iterator[str]:
    with serving_proxy(upstream.url) as url:
        yield url


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        yield session


@pytest.fixture
def guard_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="guard")
    return caplog


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str, int]]:
    """Each guard log line's route, status, cause fields and recoveries."""
    found = [LINE.match(record.getMessage()) for record in caplog.records]
    return [(m[1], int(m[2]), (m[3] or "").strip(), int(m[4])) for m in found if m]


async def shown(client: aiohttp.ClientSession, url: str, route: Route) -> str:
    async with client.post(url + route.path, json=route.body) as response:
        assert response.status == 200, await response.text()
        return await route.read(response)


# --- nothing lost -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ROUTES))
async def test_bursts_through_each_route_lose_nothing_and_send_nothing_twice(
    upstream: StaleUpstream,
    proxy_url: str,
    client: aiohttp.ClientSession,
    guard_log: pytest.LogCaptureFixture,
    name: str,
):
    route = ROUTES[name]
    async with asyncio.timeout(DEADLINE_S):
        for _ in range(BURSTS):
            texts = await asyncio.gather(*(shown(client, proxy_url, route) for _ in range(BURST)))
            assert texts == [ANSWER] * BURST

    assert upstream.answered == BURSTS * BURST  # each answered once: no request sent twice
    assert upstream.dropped >= 1  # the proxy did reuse, and the upstream closed what it reused
    assert lines(guard_log) == [(route.log_name, 200, "", 0)] * (BURSTS * BURST)


async def test_bursts_of_passed_on_requests_lose_nothing(
    upstream: StaleUpstream, proxy_url: str, client: aiohttp.ClientSession
):
    async def listed() -> object:
        async with client.get(proxy_url + "/v1/models") as response:
            assert response.status == 200
            return await response.json()

    async with asyncio.timeout(DEADLINE_S):
        for _ in range(BURSTS):
            bodies = await asyncio.gather(*(listed() for _ in range(BURST)))
            assert bodies == [{"object": "list", "data": []}] * BURST

    assert upstream.answered == BURSTS * BURST
    assert upstream.dropped >= 1


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_on_a_connection_the_server_closes_is_still_the_one_recovery(
    upstream: StaleUpstream,
    proxy_url: str,
    client: aiohttp.ClientSession,
    guard_log: pytest.LogCaptureFixture,
    stream: bool,
):
    """The first reply is markup: its recovery goes out on the connection the first answer
    gave back to the pool, which the upstream closes; the retry on a fresh connection is
    the recovery's, not a second one."""
    upstream.script.append(MARKUP)
    route = ROUTES["chat-stream" if stream else "chat-whole"]
    async with asyncio.timeout(DEADLINE_S):
        text = await shown(client, proxy_url, route)

    assert text == ANSWER
    assert (upstream.answered, upstream.dropped) == (2, 1)
    assert lines(guard_log) == [("chat", 200, "", 1)]


# --- what still fails, and its log ----------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_that_finds_no_server_is_logged_with_its_cause(
    upstream: StaleUpstream,
    proxy_url: str,
    client: aiohttp.ClientSession,
    guard_log: pytest.LogCaptureFixture,
    stream: bool,
):
    """The markup reply came; the recovery's pooled connection is closed, and so is the
    fresh one of its retry: the client is told, and the log says why."""
    upstream.script += [MARKUP, None]
    route = ROUTES["chat-stream" if stream else "chat-whole"]
    async with asyncio.timeout(DEADLINE_S):
        async with client.post(proxy_url + route.path, json=route.body) as response:
            status, body = response.status, await response.text()

    expected_status, told = (200, CUT_OFF) if stream else (502, UNREACHABLE)
    assert status == expected_status
    assert told in body  # a stream's in-band error event; a whole answer's error body
    assert (upstream.answered, upstream.dropped, upstream.unanswered) == (1, 1, 1)
    cause = "error=ServerDisconnectedError reused=false"
    assert lines(guard_log) == [("chat", 200, cause, 1)]


@pytest.mark.parametrize("name", ["chat-stream", "chat-whole", "ollama-stream", "responses-whole"])
async def test_a_refused_upstream_is_a_502_not_retried_whose_log_names_the_cause(
    client: aiohttp.ClientSession, guard_log: pytest.LogCaptureFixture, name: str
):
    route = ROUTES[name]
    with refusing_port() as port, serving_proxy(f"http://127.0.0.1:{port}") as url:
        async with (
            asyncio.timeout(DEADLINE_S),
            client.post(url + route.path, json=route.body) as got,
        ):
            assert got.status == 502
            assert UNREACHABLE in await got.text()

    assert lines(guard_log) == [(route.log_name, 0, "error=ClientConnectorError reused=false", 0)]


@pytest.mark.parametrize("name", ["chat-stream", "ollama-whole"])
async def test_a_fresh_connection_the_upstream_drops_is_a_502_not_retried(
    upstream: StaleUpstream,
    proxy_url: str,
    client: aiohttp.ClientSession,
    guard_log: pytest.LogCaptureFixture,
    name: str,
):
    upstream.answering = False
    route = ROUTES[name]
    async with (
        asyncio.timeout(DEADLINE_S),
        client.post(proxy_url + route.path, json=route.body) as got,
    ):
        assert got.status == 502

    assert upstream.unanswered == 1  # one request: not sent again
    cause = "error=ServerDisconnectedError reused=false"
    assert lines(guard_log) == [(route.log_name, 0, cause, 0)]


async def test_a_retry_the_upstream_drops_too_is_a_502_whose_log_names_the_retrys_cause(
    upstream: StaleUpstream,
    proxy_url: str,
    client: aiohttp.ClientSession,
    guard_log: pytest.LogCaptureFixture,
):
    route = ROUTES["chat-whole"]
    async with asyncio.timeout(DEADLINE_S):
        assert await shown(client, proxy_url, route) == ANSWER
        upstream.answering = False  # the pooled connection is stale, and so is every new one
        async with client.post(proxy_url + route.path, json=route.body) as got:
            assert got.status == 502

    assert (upstream.dropped, upstream.unanswered) == (1, 1)
    assert lines(guard_log) == [
        ("chat", 200, "", 0),
        ("chat", 0, "error=ServerDisconnectedError reused=false", 0),
    ]


async def test_a_passed_on_request_the_upstream_refuses_is_logged_with_its_cause(
    client: aiohttp.ClientSession, guard_log: pytest.LogCaptureFixture
):
    with refusing_port() as port, serving_proxy(f"http://127.0.0.1:{port}") as url:
        async with asyncio.timeout(DEADLINE_S), client.get(url + "/v1/models") as got:
            assert got.status == 502

    assert "guard: pass-on status=0 error=ClientConnectorError reused=false" in guard_log.text
