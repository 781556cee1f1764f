"""Integration layer: the real mock served by uvicorn on a free 127.0.0.1 port, real clients.

One server per test session (per xdist worker), as one server would serve a whole run of
an app's tests: every test isolates itself with a fresh turn KEY. Every streaming helper
runs under a deadline so a hung stream fails the test instead of the run.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from app.config import Settings
from mock_llm import build_settings, serve_mock

from ..servers import TEST_FLOWS, app_settings, serve_app

DEADLINE_S = 15.0


@pytest.fixture(scope="session")
def mock_url() -> Iterator[str]:
    with serve_mock(build_settings((TEST_FLOWS,))) as url:
        yield url


@dataclass(frozen=True)
class AppUnderTest:
    url: str
    settings: Settings


@pytest.fixture(scope="session")
def notes_app(mock_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppUnderTest]:
    settings = app_settings(mock_url, tmp_path_factory.mktemp("app-data"))
    with serve_app(settings) as url:
        yield AppUnderTest(url, settings)


@pytest.fixture
async def app_http(notes_app: AppUnderTest) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=notes_app.url, timeout=DEADLINE_S) as client:
        yield client


@pytest.fixture
def key() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def http(mock_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=mock_url, timeout=DEADLINE_S) as client:
        yield client


@pytest.fixture
async def sdk(mock_url: str) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=f"{mock_url}/v1", api_key="test-key", max_retries=0, timeout=DEADLINE_S
    ) as client:
        yield client


def user(text: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}]


def chat_body(text: str, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {"model": "lfm2-test", "messages": user(text), "stream": stream, **extra}


@dataclass
class SseResult:
    """What a raw SSE read saw."""

    status: int
    headers: httpx.Headers
    events: list[str] = field(default_factory=list[str])
    error: Exception | None = None

    @property
    def chunks(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for event in self.events:
            if event == "[DONE]":
                continue
            try:
                out.append(json.loads(event))
            except json.JSONDecodeError:
                continue
        return out

    @property
    def done(self) -> bool:
        return bool(self.events) and self.events[-1] == "[DONE]"

    def joined(self, field_name: str) -> str:
        return "".join(
            c["choices"][0]["delta"].get(field_name) or "" for c in self.chunks if c.get("choices")
        )


async def read_sse(
    http: httpx.AsyncClient, body: dict[str, Any], max_events: int | None = None
) -> SseResult:
    """POST a chat request and read its SSE events (stopping early after max_events)."""
    async with asyncio.timeout(DEADLINE_S):
        async with http.stream("POST", "/v1/chat/completions", json=body) as response:
            result = SseResult(response.status_code, response.headers)
            if response.status_code != 200:
                await response.aread()
                result.events.append(response.text)
                return result
            try:
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        result.events.append(line[len("data: ") :])
                    else:
                        assert line == "", f"unexpected SSE line {line!r}"
                    if max_events is not None and len(result.events) >= max_events:
                        break
            except httpx.HTTPError as exc:
                result.error = exc
            return result


async def journal(http: httpx.AsyncClient, key: str) -> list[dict[str, Any]]:
    response = await http.get("/_mock/requests", params={"key": key})
    response.raise_for_status()
    return response.json()["requests"]


async def settled_journal(
    http: httpx.AsyncClient, key: str, count: int | None = None
) -> list[dict[str, Any]]:
    """The key's entries once none is in progress (and, if given, there are `count`)."""
    async with asyncio.timeout(DEADLINE_S):
        while True:
            entries = await journal(http, key)
            settled = all(e["outcome"] != "in_progress" for e in entries)
            if settled and (count is None or len(entries) >= count):
                return entries
            await asyncio.sleep(0.02)
