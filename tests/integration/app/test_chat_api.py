"""The notes app end to end over HTTP, with the mock LLM as its model."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastapi.dependencies.utils as fastapi_dependencies  # run_in_threadpool is patched
import httpx
import pytest

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.servers import app_settings, serve_app
from ...support.sse import ask, data_events
from ..conftest import AppUnderTest

BACKUPS = "When do the backups run and how are they verified?"
OFF_TOPIC = "What is the capital of France?"


async def test_grounded_turn_runs_the_tools_and_cites_the_notes(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:tool-then-answer#{key}]]")
    assert turn.status == 200
    assert turn.frames[0] == {"type": "start", "turn": turn.turn_id, "mode": "grounded"}
    [tool] = turn.of("tool")
    assert (tool["name"], tool["path"], tool["ok"]) == ("read", "/homelab/backup-notes.md", True)
    assert turn.text.startswith("Backups run nightly at 02:00")
    assert turn.last["type"] == "done"
    assert "/homelab/backup-notes.md" in turn.last["sources"]
    first, second = await settled_journal(http, key, count=2)
    assert {t["function"]["name"] for t in first.body["tools"]} == {"read", "grep", "list"}
    tool_message = second.body["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "restic" in tool_message["content"].lower() or tool_message["content"]


async def test_a_turn_resolves_its_dependencies_without_a_worker_thread(
    app_http: httpx.AsyncClient, key: str, monkeypatch: pytest.MonkeyPatch
):
    """Regression: plain `def` dependencies cost every turn a thread hop (load benchmark)."""
    hops: list[object] = []
    original = fastapi_dependencies.run_in_threadpool  # pyright: ignore[reportPrivateImportUsage]

    async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await original(func, *args, **kwargs)

    monkeypatch.setattr(fastapi_dependencies, "run_in_threadpool", counted)
    turn = await ask(app_http, f"{OFF_TOPIC} [[mock:clean#{key}]]")
    assert turn.last["type"] == "done"
    assert hops == []


async def test_deflected_turn_answers_without_tools(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, key: str
):
    turn = await ask(app_http, f"{OFF_TOPIC} [[mock:clean#{key}]]")
    assert turn.frames[0]["mode"] == "deflected"
    assert turn.last == {
        "type": "done",
        "turn": turn.turn_id,
        "mode": "deflected",
        "sources": [],
        "finish_reason": "stop",
    }
    [request] = await settled_journal(http, key, count=1)
    assert "tools" not in request.body
    assert request.body["messages"][-1]["role"] == "user"


async def test_thinking_streams_before_the_answer(app_http: httpx.AsyncClient, key: str):
    turn = await ask(app_http, f"{BACKUPS} [[mock:thinking#{key}]]")
    kinds = [f["type"] for f in turn.frames]
    assert kinds.index("thinking") < kinds.index("delta")
    assert "".join(f["text"] for f in turn.of("thinking")).startswith("The user asks")


async def test_server_error_is_retried_then_answered(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:error-then-ok#{key}]]")
    [retry] = turn.of("retry")
    assert retry["attempt"] == 2
    assert "503" in retry["reason"]
    assert turn.last["type"] == "done"
    assert len(await settled_journal(http, key, count=2)) == 2


async def test_rate_limit_waits_for_retry_after(app_http: httpx.AsyncClient, key: str):
    turn = await ask(app_http, f"{BACKUPS} [[mock:rate-limited#{key}]]")
    [retry] = turn.of("retry")
    assert retry["delay_s"] == pytest.approx(1.0, abs=0.01)
    assert turn.last["type"] == "done"


async def test_drop_mid_stream_ends_with_an_error_frame_and_no_row(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:drop-mid-stream#{key}]]")
    assert turn.last["type"] == "error"
    assert turn.last["detail"]
    assert "Traceback" not in turn.last["detail"]
    assert not turn.of("done")
    assert len(await settled_journal(http, key, count=1)) == 1  # no retry after content
    history = (await app_http.get("/api/history", params={"limit": 200})).json()["turns"]
    assert turn.turn_id not in {t["turn_id"] for t in history}


async def test_client_that_leaves_closes_the_upstream_stream_and_writes_no_row(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, key: str
):
    async with (
        asyncio.timeout(DEADLINE_S),
        app_http.stream(
            "POST", "/api/chat", json={"message": f"{BACKUPS} [[mock:slow#{key}]]"}
        ) as response,
    ):
        turn_id = response.headers["x-turn-id"]
        async with aclosing(data_events(response)) as events:
            async for event in events:
                if json.loads(event)["type"] == "delta":
                    break
    # Left mid-answer: the slow flow's stream runs for seconds more, so had the app not closed
    # it, the mock would record it `completed`, never `client_disconnected`.
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"
    history = (await app_http.get("/api/history", params={"limit": 200})).json()["turns"]
    assert turn_id not in {t["turn_id"] for t in history}


async def test_completed_turn_writes_one_row_before_done(app_http: httpx.AsyncClient, key: str):
    question = f"{BACKUPS} [[mock:tool-then-answer#{key}]]"
    turn = await ask(app_http, question)
    history = (await app_http.get("/api/history")).json()["turns"]
    [row] = [t for t in history if t["turn_id"] == turn.turn_id]
    assert row["question"] == question
    assert row["mode"] == "grounded"
    assert row["answer"] == turn.text
    assert row["sources"] == turn.last["sources"]
    assert (row["rounds"], row["tool_calls"], row["retries"]) == (2, 1, 0)
    assert row["total_ms"] >= row["first_token_ms"] >= 0


async def test_log_line_names_the_turn_and_its_counts(
    app_http: httpx.AsyncClient, notes_app: AppUnderTest, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:tool-then-answer#{key}]]")
    lines = notes_app.settings.log_file.read_text(encoding="utf-8").splitlines()
    [line] = [entry for entry in lines if f"turn={turn.turn_id} " in entry]
    match = re.search(
        r"chat turn=(\w+) mode=(\w+) rounds=(\d+) tools=(\d+) thinking_chars=(\d+)"
        r" content_chars=(\d+) total_ms=(\d+) retries=(\d+) scaffold_stripped=(\d+)$",
        line,
    )
    assert match, line
    assert match.group(1) == turn.turn_id
    assert match.group(2, 3, 4, 5) == ("grounded", "2", "1", "0")
    assert int(match.group(6)) == len(turn.text)
    assert match.group(8, 9) == ("0", "0")


async def test_read_outside_the_notes_is_refused_and_reveals_nothing(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:read-outside#{key}]]")
    assert [t["ok"] for t in turn.of("tool")] == [False, False]
    _, second = await settled_journal(http, key, count=2)
    results = [m["content"] for m in second.body["messages"] if m["role"] == "tool"]
    assert len(results) == 2
    assert all("root:" not in r for r in results)


async def test_round_cap_forces_a_final_answer_without_tools(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, notes_app: AppUnderTest, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:tool-loop#{key}]]")
    cap = notes_app.settings.agent_max_rounds
    entries = await settled_journal(http, key, count=cap + 1)
    assert len(entries) == cap + 1
    assert "tools" not in entries[-1].body
    assert turn.last["type"] == "done"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"message": ""}, "the message is empty"),
        ({"message": "   \n"}, "the message is empty"),
        ({"message": "\u200b\u200b \u200d\ufeff"}, "the message is empty"),  # issue 12
        ({"message": "\u202e\u2066\x07"}, "the message is empty"),
        ({"message": "x" * 4001}, "at most 4000"),
        ({"message": 42}, "valid string"),
        ({}, "Field required"),
        ({"message": "hi", "extra": 1}, "Extra inputs"),
    ],
)
async def test_bad_request_is_422_with_a_clear_detail(
    app_http: httpx.AsyncClient, body: dict[str, object], fragment: str
):
    response = await app_http.post("/api/chat", json=body)
    assert response.status_code == 422
    assert fragment in json.dumps(response.json()["detail"])


async def test_body_that_is_not_json_is_422(app_http: httpx.AsyncClient):
    response = await app_http.post(
        "/api/chat", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422


async def test_healthz_answers(app_http: httpx.AsyncClient):
    response = await app_http.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


async def test_a_sessions_turns_come_back_oldest_last_with_what_the_page_shows(
    app_http: httpx.AsyncClient, key: str
):
    session = f"tab-{key}"
    first = await ask(app_http, f"{BACKUPS} [[mock:clean#{key}a]]", session)
    second = await ask(app_http, f"{BACKUPS} [[mock:tool-then-answer#{key}b]]", session)
    await ask(app_http, f"{BACKUPS} [[mock:clean#{key}c]]")  # another tab's (no session)

    response = await app_http.get("/api/history", params={"session": session})

    turns = response.json()["turns"]
    assert [t["turn_id"] for t in turns] == [second.turn_id, first.turn_id]
    assert turns[0]["answer"] == second.text
    assert turns[0]["tools"] == [
        {k: frame[k] for k in ("name", "arguments", "path", "ok")} for frame in second.of("tool")
    ]
    assert turns[0]["finish_reason"] == "stop"
    assert "session_id" not in turns[0]


async def test_an_answer_cut_by_the_token_limit_is_marked_length(
    app_http: httpx.AsyncClient, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:length#{key}]]")
    assert turn.last["type"] == "done"
    assert turn.last["finish_reason"] == "length"


async def test_an_unknown_flow_shows_the_mocks_own_message_beside_the_apps_copy(
    app_http: httpx.AsyncClient, key: str
):
    turn = await ask(app_http, f"{BACKUPS} [[mock:scafold-split#{key}]]")
    assert turn.last["type"] == "error"
    assert turn.last["detail"] == "The model service rejected the request (HTTP 400)."
    assert turn.last["upstream"].startswith("Unknown mock flow 'scafold-split'. Known flows: ")


@pytest.mark.parametrize(
    "session",
    ["short", "has space in it", "x" * 65, "semi;colon-0000"],
    ids=["too-short", "space", "too-long", "punctuation"],
)
async def test_a_malformed_session_id_is_refused_with_422(
    app_http: httpx.AsyncClient, session: str
):
    chat = await app_http.post("/api/chat", json={"message": "hi", "session": session})
    listing = await app_http.get("/api/history", params={"session": session})
    assert (chat.status_code, listing.status_code) == (422, 422)
    assert "session" in chat.text


async def test_info_names_the_model_and_no_demo_with_a_real_model(
    app_http: httpx.AsyncClient, notes_app: AppUnderTest
):
    info = (await app_http.get("/api/info")).json()
    assert info == {"model": notes_app.settings.llm_model, "demo": None}


async def test_info_offers_the_failure_examples_when_the_model_is_the_embedded_mock(
    mock_url: str, tmp_path: Path
):
    settings = replace(app_settings(mock_url, tmp_path), embedded_mock_url=mock_url)
    with serve_app(settings) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            demo = (await client.get("/api/info")).json()["demo"]
            flows = (await client.get(f"{mock_url}/_mock/flows")).json()["flows"]
    assert demo["journal_url"] == f"{mock_url}/_mock/requests"
    labels = [example["label"] for example in demo["examples"]]
    assert labels == [
        "Split markup", "Markup twice", "Markup in prose", "Thinking with markup",
        "A tool call", "Upstream 503", "Dropped stream", "Hostile HTML",
    ]  # fmt: skip
    assert {example["flow"] for example in demo["examples"]} <= {flow["name"] for flow in flows}


async def test_a_grep_pattern_too_costly_to_compile_is_refused_and_the_app_stays_healthy(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, key: str
):
    """Regression (issue 12): `a{10000003}` from the model took 18.8 s and 2.6 GB to compile,
    and /healthz stopped answering meanwhile."""
    turn = await ask(app_http, f"{BACKUPS} [[mock:grep-bomb#{key}]]")
    [tool] = turn.of("tool")
    assert (tool["name"], tool["ok"]) == ("grep", False)
    assert turn.last["type"] == "done"
    _, answer_request = await settled_journal(http, key, count=2)
    refusal = answer_request.body["messages"][-1]["content"]
    assert "at most 1000 repeats" in refusal
    assert (await app_http.get("/healthz")).status_code == 200


async def test_a_lone_surrogate_is_a_422_and_the_connection_keeps_serving(notes_app: AppUnderTest):
    """Regression (issue 12): the validation-error handler could not encode the echoed
    surrogate, answered 500 and reset the keep-alive connection."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=notes_app.url, timeout=DEADLINE_S, limits=limits) as one:
        response = await one.post(
            "/api/chat",
            content=b'{"message": "hi \\ud800"}',
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == ["body", "message"]
        assert (await one.get("/healthz")).status_code == 200


async def test_a_422_never_echoes_the_input(app_http: httpx.AsyncClient):
    """Regression (issue 12): the 422 echoed the whole input (a 50 MB body, a 52 MB reply)."""
    huge = "x" * 30_000  # over the message's limit, under the body's (64 KiB)
    response = await app_http.post("/api/chat", json={"message": huge, f"k{huge}": 1})
    assert response.status_code == 422
    assert len(response.content) < 2_000
    assert "xxxxxxxxxx" * 10 not in response.text
    assert {e["type"] for e in response.json()["detail"]} == {"string_too_long", "extra_forbidden"}
