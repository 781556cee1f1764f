"""The bare install's guard proxy (guard/bare) as an HTTP/1.1 server: what its own code does.

What it guards is the transport's, proved with every route's suite (`GUARD_WAYS`' "bare");
what both proxy servers share (limits, keep-alives, a client that leaves, the key) is in
test_guard_proxy.py for each. Here: the HTTP a client may send that the full proxy leaves
to uvicorn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from ...support.deadlines import DEADLINE_S
from ...support.servers import serve_bare_guard


@pytest.fixture(scope="module")
def bare_address(mock_url: str) -> Iterator[tuple[str, int]]:
    with serve_bare_guard(mock_url) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        yield host, int(port)


async def exchange(address: tuple[str, int], *requests: bytes) -> bytes:
    """Send `requests` on one connection, then read until the server closes it."""
    async with asyncio.timeout(DEADLINE_S):
        reader, writer = await asyncio.open_connection(*address)
        try:
            for request in requests:
                writer.write(request)
            await writer.drain()
            return await reader.read(-1)
        finally:
            writer.close()


def get(path: str, *headers: str, close: bool = True) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def error_of(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body)["error"]["message"]


async def test_one_connection_carries_request_after_request(bare_address: tuple[str, int]):
    answer = await exchange(bare_address, get("/v1/models", close=False), get("/v1/models"))
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert answer.count(b'"mock-llm"') == 2


@pytest.mark.parametrize(
    ("request_bytes", "status", "says"),
    [
        (b"NONSENSE\r\n\r\n", 400, "not valid HTTP/1.1"),
        (get("http://127.0.0.1/v1/models"), 400, "not a path"),
        (get("/v1/models", "X-Big: " + "a" * 70_000), 431, "headers are over"),
        (get("/v1/models", "Content-Length: 99999999999"), 413, "larger than"),
        (get("/v1/models").replace(b"Host: 127.0.0.1", b"Host: evil.example"), 421, "evil"),
    ],
    ids=["not-http", "absolute-target", "headers-70kb", "declared-body", "foreign-host"],
)
async def test_a_request_it_cannot_take_is_refused_in_the_openai_error_shape_and_closed(
    bare_address: tuple[str, int], request_bytes: bytes, status: int, says: str
):
    answer = await exchange(bare_address, request_bytes)
    assert error_of(answer)[0] == status
    assert says in error_of(answer)[1]
    assert b"connection: close" in answer.lower()


async def test_a_client_that_expects_100_continue_is_told_to_send_its_body(
    bare_address: tuple[str, int], key: str
):
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": f"hi [[mock:clean#{key}]]"}]}
    ).encode()
    head = "\r\n".join(
        [
            "POST /v1/chat/completions HTTP/1.1",
            "Host: 127.0.0.1",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            "Expect: 100-continue",
            "Connection: close",
        ]
    )
    async with asyncio.timeout(DEADLINE_S):
        reader, writer = await asyncio.open_connection(*bare_address)
        try:
            writer.write(f"{head}\r\n\r\n".encode())
            assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
            writer.write(body)
            answer = await reader.read(-1)
        finally:
            writer.close()
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Backups run nightly" in answer
