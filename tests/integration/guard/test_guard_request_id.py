"""The guard proxy's request id: each guarded request goes upstream with an `X-Request-Id`
(the client's plain one, else the proxy's own), its recovery with the same, and the log
line names it, so a line can be tied to the model server's records (the mock's journal).

Whole answers throughout: the proxy writes a whole answer's line before the client has it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.servers import serve_guard
from ...support.sse import chat_body

LINE = re.compile(r"^guard: chat .* scaffold_stripped=(\d+) profiles=\S+ request_id=(\S+)$")


@pytest.fixture
async def proxy(mock_url: str) -> AsyncIterator[httpx.AsyncClient]:
    with serve_guard(mock_url) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            yield client


@pytest.fixture
async def mock(mock_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=mock_url, timeout=DEADLINE_S) as client:
        yield client


async def ask(proxy: httpx.AsyncClient, flow: str, key: str, **headers: str) -> None:
    body = chat_body(f"[[mock:{flow}#{key}]]", stream=False)
    response = await proxy.post("/v1/chat/completions", json=body, headers=headers)
    response.raise_for_status()


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    """Each `guard: chat` line's (scaffold_stripped, request_id)."""
    found = (LINE.match(record.getMessage()) for record in caplog.records)
    return [(int(m.group(1)), m.group(2)) for m in found if m]


async def test_a_request_without_an_id_goes_upstream_and_into_the_log_with_the_proxys_own(
    proxy: httpx.AsyncClient,
    mock: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.INFO, logger="guard")
    await ask(proxy, "clean", key)
    [entry] = await settled_journal(mock, key)
    assert entry.request_id is not None
    assert re.fullmatch(r"guard-[0-9a-f]{32}", entry.request_id)
    assert logged(caplog) == [(0, entry.request_id)]


async def test_the_recovery_goes_upstream_with_the_requests_own_id(
    proxy: httpx.AsyncClient,
    mock: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.INFO, logger="guard")
    await ask(proxy, "scaffold-recover", key)
    first, recovery = await settled_journal(mock, key, count=2)
    assert first.request_id == recovery.request_id
    [(stripped, logged_id)] = logged(caplog)
    assert (stripped > 0, logged_id) == (True, first.request_id)


async def test_a_clients_plain_request_id_is_kept(
    proxy: httpx.AsyncClient,
    mock: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.INFO, logger="guard")
    await ask(proxy, "clean", key, **{"X-Request-Id": "client-42.a:b_c"})
    [entry] = await settled_journal(mock, key)
    assert entry.request_id == "client-42.a:b_c"
    assert logged(caplog) == [(0, "client-42.a:b_c")]


async def test_a_clients_request_id_that_is_no_plain_token_is_replaced_and_never_logged(
    proxy: httpx.AsyncClient,
    mock: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.INFO, logger="guard")
    await ask(proxy, "clean", key, **{"X-Request-Id": "id scaffold_stripped=0"})
    [entry] = await settled_journal(mock, key)
    assert entry.request_id is not None
    assert entry.request_id.startswith("guard-")
    assert logged(caplog) == [(0, entry.request_id)]
    assert "id scaffold_stripped" not in caplog.text
