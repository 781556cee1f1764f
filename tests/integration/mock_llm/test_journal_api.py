"""The journal over HTTP: exact counts under concurrency, early leavers, clearing, bounds,
the schema version and clock, and reads that wait for a turn to settle.

A settle read's verdict never depends on how long anything took: a turn that cannot settle
(a stream held open, a key never used) runs out its wait and says `settled: false`, and a
turn that has ended says `settled: true` however late the read comes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing, asynccontextmanager

import httpx
import pytest

from mock_llm import build_settings, create_app, serve_mock
from mock_llm.journal.store import JOURNAL_VERSION
from mock_llm.server import chat_routes

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.sse import chat_body, data_events, read_sse

WAIT_MS = int(DEADLINE_S * 1000 / 2)  # a settle read's own bound, inside the test's deadline


async def test_fifty_concurrent_turns_are_counted_exactly_per_key(
    http: httpx.AsyncClient, key: str
):
    plan = {f"{key}-{i}": 1 + i % 3 for i in range(50)}
    flows = ["clean", "scaffold-recover", "tool-then-answer", "scaffold-split", "thinking"]

    async def turn(index: int, turn_key: str, requests: int) -> None:
        for _ in range(requests):
            result = await read_sse(http, chat_body(f"[[mock:{flows[index % 5]}#{turn_key}]]"))
            assert result.done

    async with asyncio.timeout(DEADLINE_S * 2):
        await asyncio.gather(*(turn(i, k, n) for i, (k, n) in enumerate(plan.items())))
    for turn_key, requests in plan.items():
        entries = await settled_journal(http, turn_key, count=requests)
        assert len(entries) == requests
        assert [e.request_in_turn for e in entries] == list(range(1, requests + 1))
        assert all(e.outcome == "completed" for e in entries)


async def test_client_that_leaves_early_is_recorded_as_disconnected(
    http: httpx.AsyncClient, key: str
):
    result = await read_sse(http, chat_body(f"[[mock:slow#{key}]]"), max_events=5)
    assert len(result.events) == 5
    [entry] = await settled_journal(http, key)
    # The slow flow runs for seconds more, so `client_disconnected` (not `completed`) is the
    # proof the mock saw the client go, however long it took to notice.
    assert entry.outcome == "client_disconnected"
    assert entry.disconnected_ms == entry.ended_ms
    assert entry.chunks_sent >= 5


async def test_entry_records_body_flow_step_and_timings(http: httpx.AsyncClient, key: str):
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    body = chat_body(f"[[mock:clean#{key}]]", tools=tools, stream_options={"include_usage": True})
    await read_sse(http, body)
    [entry] = await settled_journal(http, key)
    assert entry.body == body
    assert (entry.flow, entry.step, entry.steps, entry.key) == ("clean", 1, 1, key)
    assert entry.stream is True
    assert entry.status == 200
    assert entry.outcome == "completed"
    assert entry.first_chunk_ms is not None
    assert entry.ended_ms is not None
    assert entry.received_ms <= entry.first_chunk_ms <= entry.ended_ms
    assert entry.chunks_sent > 3


async def test_fault_outcome_names_the_fault(http: httpx.AsyncClient, key: str):
    await read_sse(http, chat_body(f"[[mock:drop-mid-stream#{key}]]"))
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "fault"
    assert entry.fault == "cut(abort) after 6 chunks"
    assert entry.chunks_sent == 6


async def test_flow_filter_selects_entries(http: httpx.AsyncClient, key: str):
    await read_sse(http, chat_body(f"[[mock:three-steps#{key}]]"))
    response = await http.get("/_mock/requests", params={"flow": "three-steps", "key": key})
    assert len(response.json()["requests"]) == 1


async def test_delete_clears_the_journal():
    with serve_mock() as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            await read_sse(client, chat_body("[[mock:clean#a]]"))
            assert (await client.delete("/_mock/requests")).status_code == 204
            listing = (await client.get("/_mock/requests")).json()
    assert listing["requests"] == []
    assert listing["dropped"] == 0


async def test_journal_is_bounded_and_counts_what_it_dropped():
    with serve_mock(build_settings(journal_capacity=3)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            for i in range(5):
                await read_sse(client, chat_body(f"[[mock:clean#k{i}]]"))
            listing = (await client.get("/_mock/requests")).json()
    assert [e["key"] for e in listing["requests"]] == ["k2", "k3", "k4"]
    assert listing["dropped"] == 2
    assert listing["capacity"] == 3
    assert (listing["first_seq"], listing["next_seq"]) == (3, 6)  # what it still holds


async def test_an_entry_keeps_the_requests_x_request_id(http: httpx.AsyncClient, key: str):
    body = chat_body(f"[[mock:clean#{key}]]")
    async with http.stream(
        "POST", "/v1/chat/completions", json=body, headers={"X-Request-Id": "guard-7f3a"}
    ) as response:
        await response.aread()
    [entry] = await settled_journal(http, key)
    assert entry.request_id == "guard-7f3a"


async def test_a_read_names_its_schema_version_and_clock(http: httpx.AsyncClient, key: str):
    await read_sse(http, chat_body(f"[[mock:clean#{key}]]"))
    [entry] = await settled_journal(http, key)
    read = (await http.get("/_mock/requests", params={"key": key})).json()
    assert read["version"] == JOURNAL_VERSION
    assert isinstance(read["started_at"], float)
    assert entry.ended_ms <= read["now_ms"]
    assert "settled" not in read


async def test_later_requests_arrive_later_on_the_one_clock(http: httpx.AsyncClient, key: str):
    for _ in range(2):
        await read_sse(http, chat_body(f"[[mock:three-steps#{key}]]"))
    first, second = await settled_journal(http, key, count=2)
    assert first.ended_ms is not None
    assert first.received_ms <= first.ended_ms <= second.received_ms


async def settle_read(http: httpx.AsyncClient, key: str, **params: int) -> dict:
    async with asyncio.timeout(DEADLINE_S):
        response = await http.get("/_mock/requests", params={"key": key, **params})
    assert response.status_code == 200, response.text
    return response.json()


@asynccontextmanager
async def open_stream(http: httpx.AsyncClient, body: dict, events: int) -> AsyncGenerator[None]:
    """A stream held open after its first `events` events; leaving closes it."""
    async with (
        asyncio.timeout(DEADLINE_S),
        http.stream("POST", "/v1/chat/completions", json=body) as response,
        aclosing(data_events(response)) as stream,
    ):
        for _ in range(events):
            await anext(stream)
        yield


async def test_settle_read_of_a_finished_turn_is_settled(http: httpx.AsyncClient, key: str):
    for _ in range(2):
        await read_sse(http, chat_body(f"[[mock:scaffold-recover#{key}]]"))
    read = await settle_read(http, key, settle_ms=50, timeout_ms=WAIT_MS)
    assert read["settled"] is True
    assert [e["outcome"] for e in read["requests"]] == ["completed", "completed"]


async def test_settle_read_of_a_turn_still_streaming_runs_out_unsettled(
    http: httpx.AsyncClient, key: str
):
    async with open_stream(http, chat_body(f"[[mock:slow#{key}]]"), events=3):
        read = await settle_read(http, key, settle_ms=0, timeout_ms=100)
    assert read["settled"] is False
    assert [e["outcome"] for e in read["requests"]] == ["in_progress"]


async def test_settle_read_answers_once_the_stream_it_waits_for_ends(
    http: httpx.AsyncClient, mock_url: str, key: str
):
    async with httpx.AsyncClient(base_url=mock_url, timeout=DEADLINE_S) as reader:
        async with open_stream(http, chat_body(f"[[mock:slow#{key}]]"), events=3):
            read = asyncio.create_task(settle_read(reader, key, settle_ms=0, timeout_ms=WAIT_MS))
        result = await read
    assert result["settled"] is True
    assert [e["outcome"] for e in result["requests"]] == ["client_disconnected"]


async def test_settle_read_of_a_key_never_used_runs_out_empty(http: httpx.AsyncClient, key: str):
    read = await settle_read(http, key, settle_ms=0, timeout_ms=0)
    assert (read["settled"], read["requests"]) == (False, [])


async def test_settle_read_keeps_the_flow_filter(http: httpx.AsyncClient, key: str):
    await read_sse(http, chat_body(f"[[mock:clean#{key}]]"))
    read = await settle_read(http, key, settle_ms=0, timeout_ms=WAIT_MS)
    assert read["settled"] is True
    response = await http.get(
        "/_mock/requests", params={"key": key, "flow": "xss", "settle_ms": 0, "timeout_ms": 0}
    )
    assert (response.json()["settled"], response.json()["requests"]) == (False, [])


async def test_an_unexpected_failure_of_the_chat_handler_still_ends_its_entry(
    monkeypatch: pytest.MonkeyPatch,
):
    """Regression (issue 12): a 500 left its entry in progress forever, so every later
    settle read on that mock waited out its timeout."""

    def broken(raw: bytes, **options: object) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(chat_routes, "parse_chat_request", broken)
    transport = httpx.ASGITransport(create_app(build_settings()), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        answer = await client.post("/v1/chat/completions", json={"model": "m"})
        [entry] = (await client.get("/_mock/requests")).json()["requests"]

    assert answer.status_code == 500
    assert entry["outcome"] == "rejected"
    assert "RuntimeError" in entry["error"]
