"""The app under upstream faults and client disconnects, end to end over HTTP (issue 12).

One mock per module, with this file's own flows next to the test flows, and one app on it
that honours Retry-After only up to 0.5 s (so no test waits on one) and sends keep-alive
comments after 0.1 s of silence. Every case checks what the client saw (exactly one terminal
frame, the right copy), what the mock saw (its journal: how many requests, how each ended),
that a failed or abandoned turn wrote no row, and that the app's model connection pool is
idle again afterwards (`/healthz` `upstream.idle`, polled under the deadline).

Flows that must outlive the test stall for 600 s: a journal entry that ends
`client_disconnected` while the test runs was closed by the app, promptly and by event, not
by any timeout (the mock would otherwise still be in its stall, or have completed).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mock_llm import build_settings, serve_mock
from scaffold_guard.app.errors import TURN_TIMED_OUT
from scaffold_guard.app.rag.llm.errors import MSG_CUT, MSG_MALFORMED

from ...support.deadlines import DEADLINE_S, POLL_S
from ...support.journal import journal, settled_journal
from ...support.servers import TEST_FLOWS, app_settings, serve_app
from ...support.sse import Turn, ask

LONG_STALL_S = 600
MEGABYTE_ANSWER = "m" * (1 << 20)
FLOWS: dict[str, Any] = {
    "busy-briefly": {"steps": [{"fault": {"kind": "http", "status": 429, "retry_after": 0}},
                               {"content": "Recovered after a 429."}]},
    "busy-for-a-second": {"steps": [{"fault": {"kind": "http", "status": 429, "retry_after": 1}},
                                    {"content": "Never reached."}]},
    "busy-for-an-hour": {"steps": [{"fault": {"kind": "http", "status": 429,
                                              "retry_after": 3600}},
                                   {"content": "Never reached."}]},
    "down-twice": {"steps": [{"fault": {"kind": "http", "status": 502}},
                             {"fault": {"kind": "http", "status": 503}},
                             {"content": "Up again."}]},
    "stall-before-first-token": {"steps": [{"content": "late words",
                                            "fault": {"kind": "stall", "after_chunks": 1,
                                                      "seconds": LONG_STALL_S}}]},
    "stall-mid-answer": {"steps": [{"content": "one two three four five six",
                                    "fault": {"kind": "stall", "after_chunks": 3,
                                              "seconds": LONG_STALL_S}}]},
    "stall-while-thinking": {"steps": [{"reasoning": "let me think about this for a while",
                                        "content": "done thinking",
                                        "fault": {"kind": "stall", "after_chunks": 3,
                                                  "seconds": LONG_STALL_S}}]},
    "tool-then-stall": {"steps": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "/homelab/backups.md"}}]},
        {"content": "after the tool", "fault": {"kind": "stall", "after_chunks": 1,
                                                 "seconds": LONG_STALL_S}},
    ]},
    "megabyte-line": {"steps": [{"content": MEGABYTE_ANSWER, "chunking": "whole"}]},
}  # fmt: skip
QUESTION = "When do backups run?"  # grounded in the sample notes, so tools are offered


@pytest.fixture(scope="module")
def mock_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    flows = tmp_path_factory.mktemp("fault-flows") / "flows.yaml"
    flows.write_text(yaml.safe_dump({"flows": FLOWS}), encoding="utf-8")
    with serve_mock(build_settings((TEST_FLOWS, flows))) as url:
        yield url


def fault_app_env(**extra: str) -> dict[str, str]:
    return {"SG_LLM_RETRY_AFTER_CAP_S": "0.5", "SG_SSE_KEEPALIVE_S": "0.1", **extra}


@pytest.fixture(scope="module")
def fault_app(mock_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = app_settings(mock_url, tmp_path_factory.mktemp("fault-app"), **fault_app_env())
    with serve_app(settings) as url:
        yield url


@pytest.fixture
async def app(fault_app: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=fault_app, timeout=DEADLINE_S) as client:
        yield client


def message(flow: str, key: str) -> str:
    return f"{QUESTION} [[mock:{flow}#{key}]]"


def terminal(turn: Turn) -> dict[str, Any]:
    """The turn's one terminal frame (it fails unless there is exactly one, and it is last)."""
    terminals = [f for f in turn.frames if f["type"] in ("done", "error")]
    assert len(terminals) == 1, turn.frames
    assert turn.last is terminals[0]
    return terminals[0]


async def pool_idle(app: httpx.AsyncClient) -> bool:
    """Whether the app's model connection pool becomes idle (polled under the deadline)."""
    async with asyncio.timeout(DEADLINE_S):
        while True:
            upstream = (await app.get("/healthz")).json()["upstream"]
            if upstream["idle"] and upstream["open_responses"] == 0:
                return True
            await asyncio.sleep(POLL_S)


async def has_row(app: httpx.AsyncClient, turn_id: str) -> bool:
    turns = (await app.get("/api/history", params={"limit": 200})).json()["turns"]
    return any(t["turn_id"] == turn_id for t in turns)


# --- faults before the first piece: retried, with bounded waits --------------------------------


@pytest.mark.parametrize(
    ("flow", "requests"), [("busy-briefly", 2), ("down-twice", 3), ("error-then-ok", 2)]
)
async def test_a_429_or_5xx_before_the_first_piece_is_retried_and_the_turn_completes(
    app: httpx.AsyncClient, http: httpx.AsyncClient, key: str, flow: str, requests: int
) -> None:
    turn = await ask(app, message(flow, key))

    assert terminal(turn)["type"] == "done"
    assert len(turn.of("retry")) == requests - 1
    assert all(0 <= f["delay_s"] <= 8 for f in turn.of("retry"))
    assert len(await settled_journal(http, key, count=requests)) == requests
    assert await has_row(app, turn.turn_id)
    assert await pool_idle(app)


@pytest.mark.parametrize(
    ("flow", "asked"), [("busy-for-a-second", "1 s"), ("busy-for-an-hour", "about 60 min")]
)
async def test_a_retry_after_past_the_cap_ends_the_turn_at_once_saying_how_long_was_asked(
    app: httpx.AsyncClient, http: httpx.AsyncClient, key: str, flow: str, asked: str
) -> None:
    turn = await ask(app, message(flow, key))

    error = terminal(turn)
    assert error["type"] == "error"
    assert f"asked to wait {asked}" in error["detail"]
    assert turn.of("retry") == []
    assert len(await settled_journal(http, key)) == 1
    assert not await has_row(app, turn.turn_id)
    assert await pool_idle(app)


# --- faults after the first piece: never retried -------------------------------------------


@pytest.mark.parametrize(
    ("flow", "detail"),
    [
        ("drop-mid-stream", MSG_CUT),  # the connection cut mid-body
        ("cut-eof", MSG_CUT),  # a clean end with no finish_reason and no [DONE]
        ("malformed-sse", MSG_MALFORMED),  # a data line that is not JSON
    ],
)
async def test_a_stream_broken_after_the_first_piece_ends_with_one_error_frame_and_no_row(
    app: httpx.AsyncClient, http: httpx.AsyncClient, key: str, flow: str, detail: str
) -> None:
    turn = await ask(app, message(flow, key))

    error = terminal(turn)
    assert turn.text  # some of the answer had gone out: that is why it is not retried
    assert (error["type"], error["detail"]) == ("error", detail)
    assert turn.of("retry") == []
    assert len(await settled_journal(http, key)) == 1
    assert not await has_row(app, turn.turn_id)
    assert await pool_idle(app)


async def test_a_one_megabyte_line_is_read_whole_and_shown(
    app: httpx.AsyncClient, key: str
) -> None:
    turn = await ask(app, message("megabyte-line", key))

    assert terminal(turn)["type"] == "done"
    assert turn.text == MEGABYTE_ANSWER
    assert await pool_idle(app)


async def test_a_stall_trips_the_turns_one_deadline_and_closes_the_upstream_stream(
    mock_url: str, http: httpx.AsyncClient, key: str, tmp_path: Path
) -> None:
    env = fault_app_env(SG_TURN_TIMEOUT_S="1", SG_LLM_TIMEOUT_S="600")
    with serve_app(app_settings(mock_url, tmp_path, **env)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as app:
            turn = await ask(app, message("stall-mid-answer", key))

            error = terminal(turn)
            assert (error["type"], error["detail"]) == ("error", TURN_TIMED_OUT)
            [entry] = await settled_journal(http, key)
            assert entry.outcome == "client_disconnected"  # long before its 600 s stall
            assert not await has_row(app, turn.turn_id)
            assert await pool_idle(app)


# --- long silences: keep-alive comments ------------------------------------------------------


async def test_a_long_silence_upstream_sends_keep_alive_comments_between_frames(
    app: httpx.AsyncClient, http: httpx.AsyncClient, key: str
) -> None:
    body = {"message": message("stall-mid-answer", key)}
    seen: list[str] = []
    async with asyncio.timeout(DEADLINE_S), app.stream("POST", "/api/chat", json=body) as reply:
        async for line in reply.aiter_lines():
            seen.append(line)
            if line.startswith(":"):
                break

    assert seen[-1] == ": keep-alive"
    assert any(json.loads(line[6:])["type"] == "delta" for line in seen if line.startswith("data"))
    [entry] = await settled_journal(http, key)  # leaving mid-silence closed the stream too
    assert entry.outcome == "client_disconnected"


# --- disconnects: the upstream stream is closed, no row is written --------------------------


async def leave_after(
    app: httpx.AsyncClient, http: httpx.AsyncClient, key: str, flow: str, leave_on: str
) -> str:
    """Ask, read frames until one of type `leave_on` arrives (or, for `request`, until the
    mock holds the model request open, no token sent yet), then drop the connection;
    returns the turn id."""
    body = {"message": message(flow, key)}
    async with asyncio.timeout(DEADLINE_S), app.stream("POST", "/api/chat", json=body) as reply:
        if leave_on == "request":
            while True:
                if await journal(http, key):
                    return reply.headers["x-turn-id"]
                await asyncio.sleep(POLL_S)
        async for line in reply.aiter_lines():
            if line.startswith("data: ") and json.loads(line[6:])["type"] == leave_on:
                return reply.headers["x-turn-id"]
    raise AssertionError(f"the stream ended without a {leave_on!r} frame")


@pytest.mark.parametrize(
    ("flow", "leave_on"),
    [
        ("stall-before-first-token", "request"),
        ("stall-while-thinking", "thinking"),
        ("stall-mid-answer", "delta"),
    ],
    ids=["before-the-first-token", "during-thinking", "mid-answer"],
)
async def test_a_client_that_leaves_closes_the_upstream_stream_and_writes_no_row(
    app: httpx.AsyncClient, http: httpx.AsyncClient, key: str, flow: str, leave_on: str
) -> None:
    turn_id = await leave_after(app, http, key, flow, leave_on)

    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"
    assert await pool_idle(app)
    assert not await has_row(app, turn_id)


async def test_a_client_that_leaves_during_a_tool_call_leaves_no_request_open(
    app: httpx.AsyncClient, http: httpx.AsyncClient, key: str
) -> None:
    turn_id = await leave_after(app, http, key, "tool-then-stall", "tool")

    await pool_idle(app)
    entries = await settled_journal(http, key)
    assert entries[0].outcome == "completed"  # the round that asked for the tool
    # the next round was either never sent or closed when the client left
    assert all(e.outcome == "client_disconnected" for e in entries[1:])
    assert not await has_row(app, turn_id)
