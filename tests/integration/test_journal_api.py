"""The journal over HTTP: exact counts under concurrency, early leavers, clearing, bounds."""

from __future__ import annotations

import asyncio

import httpx

from mock_llm import build_settings, serve_mock

from ..deadlines import DEADLINE_S
from ..journal import settled_journal
from ..sse import chat_body, read_sse


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
        assert [e["request_in_turn"] for e in entries] == list(range(1, requests + 1))
        assert all(e["outcome"] == "completed" for e in entries)


async def test_client_that_leaves_early_is_recorded_as_disconnected(
    http: httpx.AsyncClient, key: str
):
    result = await read_sse(http, chat_body(f"[[mock:slow#{key}]]"), max_events=5)
    assert len(result.events) == 5
    [entry] = await settled_journal(http, key)
    # The slow flow runs for seconds more, so `client_disconnected` (not `completed`) is the
    # proof the mock saw the client go, however long it took to notice.
    assert entry["outcome"] == "client_disconnected"
    assert entry["timings"]["disconnected_at"] is not None
    assert entry["chunks_sent"] >= 5


async def test_entry_records_body_flow_step_and_timings(http: httpx.AsyncClient, key: str):
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    body = chat_body(f"[[mock:clean#{key}]]", tools=tools, stream_options={"include_usage": True})
    await read_sse(http, body)
    [entry] = await settled_journal(http, key)
    assert entry["body"] == body
    assert (entry["flow"], entry["step"], entry["steps"], entry["key"]) == ("clean", 1, 1, key)
    assert entry["stream"] is True
    assert entry["status"] == 200
    assert entry["outcome"] == "completed"
    assert entry["timings"]["first_chunk_ms"] <= entry["timings"]["ended_ms"]
    assert entry["chunks_sent"] > 3


async def test_fault_outcome_names_the_fault(http: httpx.AsyncClient, key: str):
    await read_sse(http, chat_body(f"[[mock:drop-mid-stream#{key}]]"))
    [entry] = await settled_journal(http, key)
    assert entry["outcome"] == "fault"
    assert entry["fault"] == "cut(abort) after 6 chunks"
    assert entry["chunks_sent"] == 6


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
