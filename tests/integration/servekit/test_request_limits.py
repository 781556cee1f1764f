"""Both servers bound what a request may make them hold (issue 12): headers, body size and
the time a body takes to arrive. Raw sockets, since a well-behaved client cannot send a
body shorter than its Content-Length."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn

from mock_llm import build_settings, serve_mock
from scaffold_guard.app.main import create_app
from servekit.in_thread import serve_in_thread

from ...support.deadlines import DEADLINE_S
from ...support.servers import TEST_FLOWS, app_settings

SHORT_BODY_TIMEOUT_S = 0.3
BIG_HEADER = {"x-big": "a" * 1_000_000}


def raw_exchange(url: str, request: bytes) -> bytes:
    """Send `request` as it is and read the whole answer (the server closes after it)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=DEADLINE_S) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def short_body(path: str) -> bytes:
    """A POST that promises 100 bytes of body and sends 10, then waits."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n"
    ).encode() + b'{"message"'


@pytest.fixture(scope="module")
def quick_app(mock_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = app_settings(mock_url, tmp_path_factory.mktemp("limits"))
    config = uvicorn.Config(
        create_app(settings, body_timeout_s=SHORT_BODY_TIMEOUT_S), log_level="warning"
    )
    with serve_in_thread(config) as url:
        yield url


@pytest.fixture(scope="module")
def quick_mock() -> Iterator[str]:
    settings = build_settings((TEST_FLOWS,))
    with serve_mock(dataclasses.replace(settings, body_timeout_s=SHORT_BODY_TIMEOUT_S)) as url:
        yield url


async def test_the_app_refuses_a_megabyte_of_headers_with_431(app_http: httpx.AsyncClient):
    response = await app_http.get("/healthz", headers=BIG_HEADER)
    assert response.status_code == 431
    assert response.json() == {"detail": "The request headers are over 32768 bytes."}
    assert (await app_http.get("/healthz")).status_code == 200


async def test_the_app_refuses_a_body_over_64_kib_with_413(app_http: httpx.AsyncClient):
    response = await app_http.post("/api/chat", json={"message": "x" * 70_000})
    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is larger than 65536 bytes."}


def test_the_app_answers_408_to_a_body_shorter_than_its_length(quick_app: str):
    """Regression (issue 12): such a request was held for over 90 s."""
    answer = raw_exchange(quick_app, short_body("/api/chat"))
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"did not arrive within 0.3 s" in answer
    assert httpx.get(f"{quick_app}/healthz", timeout=DEADLINE_S).status_code == 200


async def test_the_mock_refuses_a_megabyte_of_headers_with_431_in_openai_shape(
    http: httpx.AsyncClient,
):
    response = await http.get("/healthz", headers=BIG_HEADER)
    assert response.status_code == 431
    assert response.json()["error"]["message"] == "The request headers are over 32768 bytes."


def test_the_mock_answers_408_to_a_body_shorter_than_its_length_and_journals_it(
    quick_mock: str,
):
    answer = raw_exchange(quick_mock, short_body("/v1/chat/completions"))
    assert answer.startswith(b"HTTP/1.1 408 ")
    [entry] = httpx.get(f"{quick_mock}/_mock/requests", timeout=DEADLINE_S).json()["requests"]
    assert (entry["status"], entry["outcome"]) == (408, "rejected")
