"""Bad input gets a clear OpenAI-shaped error, is journaled, and never takes the server down."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx
import pytest

from mock_llm import build_settings, serve_mock

from ...support.deadlines import DEADLINE_S, POLL_S
from ...support.journal import settled_journal
from ...support.sse import chat_body, read_sse
from ..helpers.openai_errors import assert_openai_error


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"model": "m"}', "'messages' must be a non-empty list"),
        (b'{"model": "m", "messages": []}', "'messages' must be a non-empty list"),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "model parameter"),
    ],
)
async def test_malformed_request_is_400(http: httpx.AsyncClient, content: bytes, fragment: str):
    response = await http.post(
        "/v1/chat/completions", content=content, headers={"content-type": "application/json"}
    )
    assert_openai_error(response, 400, fragment)
    assert (await http.get("/healthz")).status_code == 200


async def test_unknown_flow_is_400_naming_it_and_listing_valid_ones(
    http: httpx.AsyncClient, key: str
):
    response = await http.post("/v1/chat/completions", json=chat_body(f"[[mock:nope#{key}]]"))
    assert_openai_error(response, 400, "Unknown mock flow 'nope'")
    assert "scaffold-recover" in response.json()["error"]["message"]
    assert response.json()["error"]["code"] == "unknown_flow"
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "rejected"
    assert entry.status == 400


async def test_malformed_trigger_is_400(http: httpx.AsyncClient):
    response = await http.post("/v1/chat/completions", json=chat_body("[[mock:bad flow]]"))
    assert_openai_error(response, 400, "malformed trigger")


@pytest.fixture(scope="module")
def small_mock():
    with serve_mock(build_settings(max_body_bytes=2048)) as url:
        yield url


async def test_oversized_body_is_413(small_mock: str):
    async with httpx.AsyncClient(base_url=small_mock, timeout=DEADLINE_S) as client:
        response = await client.post("/v1/chat/completions", json=chat_body("x" * 5000))
        assert_openai_error(response, 413, "larger than 2048 bytes")
        assert (await client.get("/healthz")).status_code == 200


async def test_oversized_chunked_body_without_length_is_413(small_mock: str):
    async def body():
        for _ in range(10):
            yield b"x" * 512

    async with httpx.AsyncClient(base_url=small_mock, timeout=DEADLINE_S) as client:
        response = await client.post("/v1/chat/completions", content=body())
        assert_openai_error(response, 413, "larger than 2048 bytes")


async def test_unknown_path_is_404_in_openai_shape(http: httpx.AsyncClient):
    assert_openai_error(await http.get("/v1/embeddings"), 404, "/v1/embeddings")


async def test_wrong_method_is_405_in_openai_shape(http: httpx.AsyncClient):
    assert_openai_error(await http.get("/v1/chat/completions"), 405, "GET")


async def test_server_still_serves_after_bad_input(http: httpx.AsyncClient, key: str):
    await http.post("/v1/chat/completions", content=b"\x00\xff")
    result = await read_sse(http, chat_body(f"[[mock:clean#{key}]]"))
    assert result.done


async def test_flows_listing_describes_every_flow(http: httpx.AsyncClient):
    listing = (await http.get("/_mock/flows")).json()["flows"]
    names = {f["name"] for f in listing}
    assert {"scaffold-recover", "quick-stall", "default"} <= names
    assert all(f["description"] for f in listing if f["source"] == "builtin")


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("key=k&settle_ms=abc", "settle_ms"),
        ("key=k&settle_ms=-5", "settle_ms"),
        ("key=k&settle_ms=99999999999999999999999", "settle_ms"),
        ("key=k&settle_ms=10&timeout_ms=86400000", "timeout_ms"),
        ("key=k&settle_ms=10&timeout_ms=1.5", "timeout_ms"),
        ("settle_ms=10", "settle_ms"),
        ("key=k&timeout_ms=10", "timeout_ms"),
        ("key=k&settle=10", "settle"),
        ("key=a&key=b", "key"),
    ],
)
async def test_bad_journal_query_is_400_naming_the_parameter(
    http: httpx.AsyncClient, query: str, param: str
):
    response = await http.get(f"/_mock/requests?{query}")
    assert_openai_error(response, 400, param)
    assert response.json()["error"]["param"] == param


async def test_a_client_gone_before_its_body_was_read_is_journaled_as_disconnected():
    """Such an entry must end: one left in progress with no key would hold every settle read."""
    with serve_mock() as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            await read_sse(client, chat_body("[[mock:clean#done]]"))
            host, port = urlsplit(url).hostname, urlsplit(url).port
            async with asyncio.timeout(DEADLINE_S):
                _, writer = await asyncio.open_connection(host, port)
                writer.write(
                    b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
                )
                await writer.drain()
                while True:  # until the mock has the half-sent request in its journal
                    if len((await client.get("/_mock/requests")).json()["requests"]) == 2:
                        break
                    await asyncio.sleep(POLL_S)
                writer.close()
                await writer.wait_closed()
            params = {"key": "done", "settle_ms": 0, "timeout_ms": int(DEADLINE_S * 500)}
            settled = (await client.get("/_mock/requests", params=params)).json()["settled"]
            entries = (await client.get("/_mock/requests")).json()["requests"]
    assert settled is True
    assert [e["outcome"] for e in entries] == ["completed", "client_disconnected"]


async def test_a_lone_surrogate_is_kept_and_every_later_journal_read_still_answers(
    http: httpx.AsyncClient, key: str
):
    """Regression (issue 12): the journal could not write a lone surrogate it had recorded,
    and every later read answered 500 until it was cleared."""
    body = (
        b'{"model": "m", "messages": [{"role": "user", "content": "hi \\ud800 [[mock:clean#K]]"}]}'
    )
    response = await http.post(
        "/v1/chat/completions",
        content=body.replace(b"#K", f"#{key}".encode()),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200
    [entry] = await settled_journal(http, key)
    assert entry.body["messages"][0]["content"].startswith("hi \ud800 ")
    assert (await http.get("/_mock/requests")).status_code == 200


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
async def test_a_body_nested_too_deep_is_400_and_its_entry_is_finished(
    http: httpx.AsyncClient, depth: int
):
    """Regression (issue 12): JSON nested about 1000 deep gave a 500 (RecursionError) and
    left its journal entry in_progress forever."""
    before = len((await http.get("/_mock/requests")).json()["requests"])
    body = b'{"model": "m", "messages": ' + b"[" * depth + b"]" * depth + b"}"
    response = await http.post(
        "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert_openai_error(response, 400, "nests deeper than 64 levels")
    entries = (await http.get("/_mock/requests")).json()["requests"]
    assert [e["outcome"] for e in entries[before:]] == ["rejected"]
