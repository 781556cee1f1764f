"""scaffold_guard.app.turn.run_turn on a scripted model, fake retrieval and a real query log in
tmp_path.

Each test runs one turn under a deadline and checks the frames it yielded, the query-log
row (or its absence) and the turn's log lines.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scaffold_guard.app.config import Settings, load_settings
from scaffold_guard.app.errors import MALFORMED_REPLY, LLMError
from scaffold_guard.app.frames import Frame
from scaffold_guard.app.rag.types import Hit, RoundEnd, StreamPiece, ToolCall
from scaffold_guard.app.storage import QueryLog
from scaffold_guard.app.turn import NOTES_UNAVAILABLE, UNEXPECTED_ERROR, TurnDeps, run_turn
from servekit.pool import RequestFailed

from ..helpers.fakes import FakeChat, FakeTools, answer, call, tool_round

DEADLINE_S = 10.0
BACKUPS_HIT = Hit("/homelab/backups.md", "Schedule", "Backups run nightly at 02:00.", 1.6)


@dataclass
class FakeIndex:
    hits: list[Hit] = field(default_factory=lambda: [BACKUPS_HIT])
    error: Exception | None = None

    def search(self, query: str) -> list[Hit]:
        if self.error is not None:
            raise self.error
        return self.hits


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class Harness:
    deps: TurnDeps
    log: Lines
    query_log: QueryLog

    async def turn(
        self, question: str = "When do backups run?", session: str | None = None
    ) -> list[Frame]:
        async with asyncio.timeout(DEADLINE_S):
            return [frame async for frame in run_turn(self.deps, "t1", question, session)]


@pytest.fixture
def make(tmp_path: Path):
    logs: list[QueryLog] = []

    def build(
        chat: FakeChat,
        index: FakeIndex | None = None,
        tools: FakeTools | None = None,
        **env: str,
    ) -> Harness:
        settings: Settings = load_settings({"SG_DATA_DIR": str(tmp_path), **env})
        query_log = QueryLog(tmp_path / "log.sqlite3")
        logs.append(query_log)
        logger = logging.Logger("test-turn")
        handler = Lines()
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        logger.addHandler(handler)
        deps = TurnDeps(
            settings=settings,
            index=index or FakeIndex(),
            tools=tools or FakeTools(),
            chat=chat,
            query_log=query_log,
            logger=logger,
        )
        return Harness(deps, handler, query_log)

    yield build
    for query_log in logs:
        query_log.close()


def kinds(frames: list[Frame]) -> list[str]:
    return [frame["type"] for frame in frames]


async def test_a_clean_grounded_turn_is_start_delta_done_and_one_row(make) -> None:
    harness = make(FakeChat([answer("Nightly at 02:00.")]))

    frames = await harness.turn()

    assert kinds(frames) == ["start", "delta", "done"]
    assert frames[0] == {"type": "start", "turn": "t1", "mode": "grounded"}
    assert frames[-1] == {
        "type": "done",
        "turn": "t1",
        "mode": "grounded",
        "sources": ["/homelab/backups.md"],
        "finish_reason": "stop",
    }
    [row] = harness.query_log.recent(10)
    assert row["answer"] == "Nightly at 02:00."


async def test_a_turn_with_no_relevant_notes_is_deflected_and_offers_no_tools(make) -> None:
    chat = FakeChat([answer("The notes do not cover that.")])
    harness = make(chat, FakeIndex(hits=[]))

    frames = await harness.turn("What is the speed of light?")

    assert frames[0] == {"type": "start", "turn": "t1", "mode": "deflected"}
    assert chat.tools_sent == [None]


async def test_the_tools_kill_switch_offers_no_tools_on_a_grounded_turn(make) -> None:
    chat = FakeChat([tool_round(call(1)), answer()])
    tools = FakeTools()
    harness = make(chat, tools=tools, SG_AGENT_TOOLS="off")

    frames = await harness.turn()

    assert chat.tools_sent == [None]
    assert tools.ran == []
    assert "tool" not in kinds(frames)


async def test_a_failing_notes_search_ends_the_turn_with_an_error_frame_and_a_log_line(
    make,
) -> None:
    chat = FakeChat([answer()])
    harness = make(chat, FakeIndex(error=RuntimeError("database disk image is malformed")))

    frames = await harness.turn()

    assert frames == [{"type": "error", "turn": "t1", "detail": NOTES_UNAVAILABLE}]
    assert chat.calls == []
    assert harness.query_log.recent(10) == []
    assert "WARNING chat turn=t1 outcome=error cause=NotesError" in harness.log.lines
    assert harness.log.lines[-1].startswith("INFO chat turn=t1 mode=none rounds=0")
    assert "malformed" not in frames[0]["detail"]


async def test_a_request_that_got_no_response_is_logged_with_its_error_and_connection(
    make,
) -> None:
    error = LLMError("The model service could not be reached.", reason="connection failed")
    error.__cause__ = RequestFailed(ConnectionResetError(), reused=True, retried=True)
    harness = make(FakeChat([[error]]))

    await harness.turn()

    assert (
        "WARNING chat turn=t1 outcome=error cause=LLMError reason=connection-failed"
        " error=ConnectionResetError reused=true"
    ) in " ".join(harness.log.lines)


async def test_an_llm_error_shows_its_own_message_and_writes_no_row(make) -> None:
    error = LLMError("The model service could not be reached.")
    harness = make(FakeChat([[StreamPiece("content", "Half"), error]]))

    frames = await harness.turn()

    assert kinds(frames) == ["start", "delta", "error"]
    assert frames[-1]["type"] == "error"
    assert frames[-1]["detail"] == "The model service could not be reached."
    assert harness.query_log.recent(10) == []
    assert "WARNING chat turn=t1 outcome=error cause=LLMError reason=model-error" in (
        harness.log.lines
    )


async def test_an_unexpected_error_shows_the_generic_copy_and_logs_its_traceback(make) -> None:
    harness = make(FakeChat([[ZeroDivisionError("secret internals")]]))

    frames = await harness.turn()

    assert frames[-1] == {"type": "error", "turn": "t1", "detail": UNEXPECTED_ERROR}
    logged = "\n".join(harness.log.lines)
    assert "failed unexpectedly" in logged
    assert "ZeroDivisionError: secret internals" in logged


async def test_every_turn_ends_with_one_turn_line_whatever_its_outcome(make) -> None:
    harness = make(FakeChat([tool_round(call(1)), answer("Done.")]))

    await harness.turn()

    [line] = [entry for entry in harness.log.lines if "rounds=" in entry]
    assert re.fullmatch(
        r"INFO chat turn=t1 mode=grounded rounds=2 tools=1 thinking_chars=0 content_chars=5"
        r" total_ms=\d+ retries=0 scaffold_stripped=0",
        line,
    )


SPAN = "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>"


async def test_a_recovered_turn_tells_the_page_then_shows_only_the_clean_answer(make) -> None:
    harness = make(FakeChat([[StreamPiece("content", SPAN), *answer("")], answer("Nightly.")]))

    frames = await harness.turn()

    assert kinds(frames) == ["start", "retry", "delta", "done"]
    assert frames[1] == {"type": "retry", "reason": "recovery"}
    assert SPAN not in json.dumps(frames)
    [row] = harness.query_log.recent(10)
    assert row["answer"] == "Nightly."
    [line] = [entry for entry in harness.log.lines if "rounds=" in entry]
    assert line.endswith(f"retries=0 scaffold_stripped={len(SPAN)}")
    assert f"WARNING agent: stripped {len(SPAN)} chars of tool-scaffolding in round 1:" in (
        "\n".join(harness.log.lines)
    )


async def test_a_malformed_reply_ends_with_the_dedicated_copy_and_no_row(make) -> None:
    harness = make(FakeChat([[StreamPiece("content", SPAN), *answer("")]]))

    frames = await harness.turn()

    assert kinds(frames) == ["start", "retry", "error"]
    assert frames[-1] == {"type": "error", "turn": "t1", "detail": MALFORMED_REPLY}
    assert harness.query_log.recent(10) == []
    [line] = [entry for entry in harness.log.lines if "rounds=" in entry]
    assert line.endswith(f"retries=0 scaffold_stripped={2 * len(SPAN)}")
    assert "WARNING chat turn=t1 outcome=error cause=MalformedReplyError" in harness.log.lines


async def test_opt_in_profiles_are_stripped_when_configured(make) -> None:
    hermes = '<tool_call>{"name": "read"}</tool_call>'
    chat = FakeChat([[StreamPiece("content", f"{hermes}Nightly."), *answer("")]])
    harness = make(chat, SG_SCAFFOLD_PROFILES="hermes")

    frames = await harness.turn()

    assert [f for f in frames if f["type"] == "delta"] == [{"type": "delta", "text": "Nightly."}]


async def test_a_tool_chip_never_carries_markup_from_the_models_arguments(make) -> None:
    hostile = ToolCall("call_1", "read", json.dumps({"path": f"/homelab/backups.md{SPAN}"}))
    harness = make(FakeChat([tool_round(hostile), answer("Nightly.")]))

    frames = await harness.turn()

    [tool] = [f for f in frames if f["type"] == "tool"]
    assert tool["type"] == "tool"
    assert tool["arguments"] == json.dumps({"path": "/homelab/backups.md"})
    assert tool["path"] == "/homelab/backups.md"
    assert "<|" not in json.dumps(tool)


async def test_a_turns_row_keeps_its_session_its_tool_chips_and_its_finish_reason(make) -> None:
    harness = make(FakeChat([tool_round(call(1)), answer("Nightly.")]))

    frames = await harness.turn(session="tab-0123456789")

    [row] = harness.query_log.recent(10, session="tab-0123456789")
    [tool] = [f for f in frames if f["type"] == "tool"]
    assert row["tools"] == [{k: tool[k] for k in ("name", "arguments", "path", "ok")}]
    assert row["finish_reason"] == "stop"
    assert harness.query_log.recent(10, session="another-tab-0000") == []


async def test_an_answer_cut_by_the_length_limit_says_so_in_its_done_frame_and_row(make) -> None:
    harness = make(FakeChat([[StreamPiece("content", "Backups run nigh"), RoundEnd((), "length")]]))

    frames = await harness.turn()

    assert frames[-1]["type"] == "done"
    assert frames[-1]["finish_reason"] == "length"
    assert harness.query_log.recent(10)[0]["finish_reason"] == "length"


async def test_an_upstream_rejection_carries_the_services_own_message_beside_the_apps(
    make,
) -> None:
    error = LLMError(
        "The model service rejected the request (HTTP 400).",
        status=400,
        upstream="Unknown mock flow 'scafold-split'",
    )
    harness = make(FakeChat([[error]]))

    frames = await harness.turn()

    assert frames[-1] == {
        "type": "error",
        "turn": "t1",
        "detail": "The model service rejected the request (HTTP 400).",
        "upstream": "Unknown mock flow 'scafold-split'",
    }


async def test_an_error_without_upstream_text_sends_no_upstream_field(make) -> None:
    harness = make(FakeChat([[LLMError("The model service could not be reached.")]]))

    frames = await harness.turn()

    assert "upstream" not in frames[-1]


async def test_a_model_errors_log_line_names_its_reason_label(make) -> None:
    """Regression (issue 12): the log line said outcome=error but not why."""
    error = LLMError("The model service had a problem (HTTP 503).", reason="HTTP 503 server error")
    harness = make(FakeChat([[error]]))

    await harness.turn()

    assert (
        "WARNING chat turn=t1 outcome=error cause=LLMError reason=http-503-server-error"
        in harness.log.lines
    )
