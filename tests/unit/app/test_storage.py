from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

from scaffold_guard.app.storage import QueryLog, ToolChip, TurnRow


def row(turn_id: str, question: str = "q", created_at: float = 1.0) -> TurnRow:
    return TurnRow(
        turn_id=turn_id,
        question=question,
        mode="grounded",
        answer="a",
        sources=["/homelab/backups.md"],
        rounds=1,
        tool_calls=0,
        retries=0,
        first_token_ms=5,
        total_ms=9,
        created_at=created_at,
    )


def test_a_recorded_turn_is_listed_with_its_fields(tmp_path: Path):
    log = QueryLog(tmp_path / "db" / "q.sqlite3")
    assert log.record(row("t1"))
    [listed] = log.recent()
    assert listed["turn_id"] == "t1"
    assert listed["sources"] == ["/homelab/backups.md"]
    assert (listed["mode"], listed["first_token_ms"], listed["total_ms"]) == ("grounded", 5, 9)


def test_the_same_turn_id_is_written_once(tmp_path: Path):
    log = QueryLog(tmp_path / "q.sqlite3")
    assert log.record(row("t1"))
    assert not log.record(row("t1", question="again"))
    assert log.count() == 1


def test_recent_lists_newest_first_and_respects_the_limit(tmp_path: Path):
    log = QueryLog(tmp_path / "q.sqlite3")
    for i in range(5):
        log.record(row(f"t{i}", created_at=float(i)))
    assert [r["turn_id"] for r in log.recent(limit=3)] == ["t4", "t3", "t2"]


def test_hostile_text_is_stored_verbatim(tmp_path: Path):
    log = QueryLog(tmp_path / "q.sqlite3")
    question = "'); DROP TABLE query_log; --\r\n[INFO] forged\x1b[31m<script>"
    log.record(row("t1", question=question))
    assert log.recent()[0]["question"] == question


def test_fifty_concurrent_writers_never_see_a_locked_database(tmp_path: Path):
    log = QueryLog(tmp_path / "q.sqlite3")
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            log.record(row(f"t{i}"))
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert log.count() == 50


def test_rows_survive_reopening(tmp_path: Path):
    QueryLog(tmp_path / "q.sqlite3").record(row("t1"))
    assert QueryLog(tmp_path / "q.sqlite3").count() == 1


OLD_SCHEMA = """
CREATE TABLE query_log (
    turn_id TEXT PRIMARY KEY, created_at REAL NOT NULL, question TEXT NOT NULL,
    mode TEXT NOT NULL, answer TEXT NOT NULL, sources TEXT NOT NULL, rounds INTEGER NOT NULL,
    tool_calls INTEGER NOT NULL, retries INTEGER NOT NULL, first_token_ms INTEGER,
    total_ms INTEGER NOT NULL
);
INSERT INTO query_log VALUES ('old1', 1.0, 'q', 'grounded', 'a', '[]', 1, 0, 0, 5, 9);
"""


def test_a_database_from_before_sessions_gains_the_new_columns_and_keeps_its_rows(
    tmp_path: Path,
):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    log = QueryLog(path)
    assert log.record(replace(row("new1", created_at=2.0), session="tab-0123456789"))
    old, new = reversed(log.recent())
    assert (old["turn_id"], old["tools"], old["finish_reason"]) == ("old1", [], None)
    assert [r["turn_id"] for r in log.recent(session="tab-0123456789")] == ["new1"]
    assert "session_id" not in new
    log.close()


def test_tool_chips_and_finish_reason_round_trip(tmp_path: Path):
    log = QueryLog(tmp_path / "q.sqlite3")
    chip: ToolChip = {"name": "read", "arguments": '{"path": "/homelab/x.md"}', "path": None,
                      "ok": False}  # fmt: skip
    log.record(replace(row("t1"), tools=[chip], finish_reason="length"))
    [listed] = log.recent()
    assert (listed["tools"], listed["finish_reason"]) == ([chip], "length")
    log.close()
