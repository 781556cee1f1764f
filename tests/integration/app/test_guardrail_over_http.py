"""The guardrail end to end: POST /api/chat against every scaffold flow of the real mock.

Each flow runs on both paths, grounded (the agent with the document tools) and deflected
(the deflect prompt, no tools). Each case checks the frames, the mock's journal for the
turn's KEY (how many requests, and the shape of a recovery request), the query-log row or
its absence, and the exact `scaffold_stripped` value of the turn's log line. Expected texts
and stripped counts are derived from the flows themselves, never from the app's filter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from guardrail.policy import CORRECTION_INSTRUCTION, strip_warning
from mock_llm import builtin_flows
from scaffold_guard.app.config import Settings
from scaffold_guard.app.errors import MALFORMED_REPLY

from ...support.deadlines import DEADLINE_S
from ...support.journal import Entry, settled_journal
from ...support.servers import app_settings, serve_app
from ...support.sse import Turn, ask
from ..conftest import AppUnderTest

FLOWS = builtin_flows()
QUESTIONS = {"grounded": "When do backups run?", "deflected": "What is the capital of France?"}
MARKUP = re.compile(r"<\|tool_calls?\|>|<\|tool_call_start\|>.*?(<\|tool_call_end\|>|$)")


def content(flow: str, step: int = 0) -> str:
    return FLOWS[flow].steps[step].content


def markup_chars(flow: str, step: int = 0) -> int:
    return sum(len(m.group()) for m in MARKUP.finditer(content(flow, step)))


def shown(flow: str, step: int = 0) -> str:
    return MARKUP.sub("", content(flow, step))


@dataclass(frozen=True)
class Case:
    flow: str
    text: str  # what the user sees
    requests: int  # upstream requests of the turn
    stripped: int  # scaffold_stripped of the log line
    error: str | None = None


CLEAN = content("clean")
CASES = [
    Case("scaffold-recover", CLEAN, 2, markup_chars("scaffold-recover")),
    Case("scaffold-split", CLEAN, 2, markup_chars("scaffold-split")),
    Case("scaffold-repeat", "", 2, 2 * markup_chars("scaffold-repeat"), MALFORMED_REPLY),
    Case("scaffold-mixed", shown("scaffold-mixed"), 1, markup_chars("scaffold-mixed")),
    Case(
        "scaffold-standalone", shown("scaffold-standalone"), 1, markup_chars("scaffold-standalone")
    ),
    Case("unterminated", shown("unterminated"), 1, markup_chars("unterminated")),
    Case("partial-tail", content("partial-tail"), 1, 0),
    Case("lookalike", content("lookalike"), 1, 0),
    Case("thinking-scaffold", CLEAN, 1, 0),
]


def log_line(settings: Settings, turn: Turn) -> str:
    lines = settings.log_file.read_text(encoding="utf-8").splitlines()
    [line] = [entry for entry in lines if f"chat turn={turn.turn_id} mode=" in entry]
    return line


async def history_ids(app_http: httpx.AsyncClient) -> set[str]:
    turns = (await app_http.get("/api/history", params={"limit": 200})).json()["turns"]
    return {t["turn_id"] for t in turns}


def sent_messages(entry: Entry) -> list[dict[str, Any]]:
    return entry.body["messages"]


@pytest.mark.parametrize("mode", ["grounded", "deflected"])
@pytest.mark.parametrize("case", CASES, ids=[c.flow for c in CASES])
async def test_scaffold_flow_over_http(
    case: Case,
    mode: str,
    app_http: httpx.AsyncClient,
    http: httpx.AsyncClient,
    notes_app: AppUnderTest,
    key: str,
):
    turn = await ask(app_http, f"{QUESTIONS[mode]} [[mock:{case.flow}#{key}]]")

    assert turn.status == 200
    assert turn.frames[0]["mode"] == mode
    assert turn.text == case.text
    for frame in turn.frames:
        if frame["type"] != "thinking":  # thinking is shown raw by design (G9)
            assert "<|tool_call_start|>" not in json.dumps(frame)
    entries = await settled_journal(http, key, count=case.requests)
    assert len(entries) == case.requests
    assert log_line(notes_app.settings, turn).endswith(f" scaffold_stripped={case.stripped}")
    recovery = [f for f in turn.frames if f == {"type": "retry", "reason": "recovery"}]
    assert len(recovery) == (1 if case.requests == 2 else 0)
    if case.requests == 2:
        first, second = (sent_messages(e) for e in entries)
        assert "tools" not in entries[1].body
        assert [m["role"] for m in second] == [m["role"] for m in first] == ["system", "user"]
        assert second[0]["content"] == f"{first[0]['content']}\n\n{CORRECTION_INSTRUCTION}"
        assert second[1:] == first[1:]
    else:
        assert CORRECTION_INSTRUCTION not in json.dumps(sent_messages(entries[0]))
    if case.error is None:
        assert turn.last["type"] == "done"
        assert turn.turn_id in await history_ids(app_http)
    else:
        assert turn.last == {"type": "error", "turn": turn.turn_id, "detail": case.error}
        assert not turn.of("done")
        assert turn.turn_id not in await history_ids(app_http)


async def test_thinking_is_shown_raw_with_its_markup(app_http: httpx.AsyncClient, key: str):
    turn = await ask(app_http, f"{QUESTIONS['grounded']} [[mock:thinking-scaffold#{key}]]")

    thinking = "".join(f["text"] for f in turn.of("thinking"))
    assert thinking == FLOWS["thinking-scaffold"].steps[0].reasoning
    assert "<|tool_call_start|>" in thinking


async def test_harmony_analysis_in_the_answer_text_reaches_the_page_as_thinking(
    app_http: httpx.AsyncClient, notes_app: AppUnderTest, key: str
):
    flow = FLOWS["harmony-messages"]
    turn = await ask(app_http, f"{QUESTIONS['deflected']} [[mock:harmony-messages#{key}]]")

    thinking = "".join(f["text"] for f in turn.of("thinking"))
    assert thinking == "The user asks when backups run. The notes say it; answer, then read them."
    assert flow.expect is not None
    assert turn.text == flow.expect.shown
    logged = log_line(notes_app.settings, turn)
    assert logged.endswith(f" scaffold_stripped={flow.expect.stripped_chars}")
    assert f" thinking_chars={len(thinking)} " in logged


async def test_a_round_with_a_real_tool_call_is_not_recovered_on_the_grounded_path(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, notes_app: AppUnderTest, key: str
):
    turn = await ask(app_http, f"{QUESTIONS['grounded']} [[mock:tool-with-scaffold#{key}]]")

    [tool] = turn.of("tool")
    assert (tool["name"], tool["ok"]) == ("read", True)
    assert "<|" not in json.dumps(tool)
    assert turn.text == CLEAN
    assert not [f for f in turn.frames if f.get("reason") == "recovery"]
    _, second = await settled_journal(http, key, count=2)
    assert "tools" in second.body  # the answer round, not a recovery
    assert sent_messages(second)[2]["content"] is None  # no markup sent back to the model
    stripped = markup_chars("tool-with-scaffold")
    assert log_line(notes_app.settings, turn).endswith(f" scaffold_stripped={stripped}")
    assert turn.last["type"] == "done"


async def test_a_tool_call_on_the_deflected_path_is_not_run_nor_recovered(
    app_http: httpx.AsyncClient, http: httpx.AsyncClient, notes_app: AppUnderTest, key: str
):
    turn = await ask(app_http, f"{QUESTIONS['deflected']} [[mock:tool-with-scaffold#{key}]]")

    assert not turn.of("tool")
    assert turn.text == ""
    [entry] = await settled_journal(http, key, count=1)
    assert "tools" not in entry.body
    stripped = markup_chars("tool-with-scaffold")
    assert log_line(notes_app.settings, turn).endswith(f" scaffold_stripped={stripped}")
    assert turn.last["type"] == "done"


async def test_the_query_log_never_stores_markup(app_http: httpx.AsyncClient, key: str):
    turn = await ask(app_http, f"{QUESTIONS['grounded']} [[mock:scaffold-mixed#{key}]]")

    turns = (await app_http.get("/api/history", params={"limit": 200})).json()["turns"]
    [row] = [t for t in turns if t["turn_id"] == turn.turn_id]
    assert row["answer"] == shown("scaffold-mixed")
    assert "sgcanary" not in json.dumps(row)


async def test_each_stripping_request_logs_one_warning_with_the_span(
    mock_url: str, tmp_path: Path, key: str
):
    settings = app_settings(mock_url, tmp_path)
    with serve_app(settings) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            turn = await ask(client, f"{QUESTIONS['grounded']} [[mock:scaffold-repeat#{key}]]")

    lines = settings.log_file.read_text(encoding="utf-8").splitlines()
    span = content("scaffold-repeat")
    warnings = [line.split(" WARNING ", 1)[1] for line in lines if " WARNING agent:" in line]
    assert warnings == [strip_warning(len(span), 1, span), strip_warning(len(span), 2, span)]
    assert log_line(settings, turn).endswith(f" scaffold_stripped={2 * len(span)}")
