"""Integration layer: the real mock served by uvicorn on a free 127.0.0.1 port, real clients.

One server per test session (per xdist worker), as one server would serve a whole run of
an app's tests: every test isolates itself with its own turn KEY (the root conftest's `key`).
Reading streams and the journal lives in tests/support/sse.py and tests/support/journal.py,
where every wait runs under a deadline so a hung stream fails the test instead of the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import anthropic
import httpx
import httpx2
import openai
import pytest

from guard.transport import AsyncGuardTransport
from mock_llm import build_settings, serve_mock
from scaffold_guard.app.config import Settings

from ..support.deadlines import DEADLINE_S
from ..support.servers import TEST_FLOWS, app_settings, serve_app, serve_bare_guard


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
async def http(mock_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client on the mock (on a module's own mock where that module overrides mock_url)."""
    async with httpx.AsyncClient(base_url=mock_url, timeout=DEADLINE_S) as client:
        yield client


GUARD_WAYS = ["proxy", "transport", "bare"]
"""The ways a client gets the guard: the proxy in front of the model server, the guard
in-process, as its HTTP client's transport (guard.transport), or the proxy a bare install
serves (guard/bare: the transport behind asyncio and h11)."""


def sdk_for(url: str, api_key: str = "test-key", *, guarded: bool = False) -> openai.AsyncOpenAI:
    """The official client on the OpenAI API at `url`, with no retries of its own
    (`guarded`: through the guard's in-process transport, on httpx2 as the SDK types it)."""
    http = httpx2.AsyncClient(transport=AsyncGuardTransport()) if guarded else None
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1", api_key=api_key, max_retries=0, timeout=DEADLINE_S, http_client=http
    )


def claude_for(url: str, *, guarded: bool = False) -> anthropic.AsyncAnthropic:
    """The official anthropic client on the Messages API at `url`, with no retries of its
    own (`guarded`: through the guard's in-process transport, on httpx2 as the SDK wants)."""
    http = httpx2.AsyncClient(transport=AsyncGuardTransport()) if guarded else None
    return anthropic.AsyncAnthropic(
        base_url=url, api_key="test-key", max_retries=0, timeout=DEADLINE_S, http_client=http
    )


def guard_url(request: pytest.FixtureRequest, mock_url: str) -> tuple[str, bool]:
    """Where a client on a guard route goes, and whether it carries the guard in-process:
    the module's proxy (whose fixture also adds the module's flows to the mock), the
    mock itself with the transport, or the bare install's proxy (`request.param`)."""
    proxy: str = request.getfixturevalue("proxy_url")
    if request.param == "transport":
        return mock_url, True
    if request.param == "bare":
        return request.getfixturevalue("bare_url"), False
    return proxy, False


@pytest.fixture(scope="module")
def bare_url(mock_url: str) -> Iterator[str]:
    """The bare install's guard proxy (guard/bare) in front of the module's mock."""
    with serve_bare_guard(mock_url) as url:
        yield url


@pytest.fixture
async def sdk(mock_url: str) -> AsyncIterator[openai.AsyncOpenAI]:
    async with sdk_for(mock_url) as client:
        yield client
