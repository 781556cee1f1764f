"""The query log: one SQLite row per completed turn, and nothing for failed or abandoned ones.

A row keeps what the page needs to show the turn again after a reload: the question and
answer, the browser tab's session id, the tool chips and the finish reason. Callers run
these blocking calls in a worker thread.

Deliberate choices:
- The row is written before the turn's `done` frame, so a page refetching on `done` sees it.
- Writes are parameterized and idempotent by turn id (`ON CONFLICT DO NOTHING`).
- WAL (synchronous=NORMAL), a busy timeout and one locked connection with `BEGIN
  IMMEDIATE` writes, so concurrent turns never see "database is locked".
- An older database gains new columns when opened; nothing is dropped or rewritten.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

SCHEMA = """
CREATE TABLE IF NOT EXISTS query_log (
    turn_id     TEXT PRIMARY KEY,
    created_at  REAL NOT NULL,
    question    TEXT NOT NULL,
    mode        TEXT NOT NULL CHECK (mode IN ('grounded', 'deflected')),
    answer      TEXT NOT NULL,
    sources     TEXT NOT NULL,
    rounds      INTEGER NOT NULL,
    tool_calls  INTEGER NOT NULL,
    retries     INTEGER NOT NULL,
    first_token_ms INTEGER,
    total_ms    INTEGER NOT NULL,
    session_id  TEXT,
    tools       TEXT NOT NULL DEFAULT '[]',
    finish_reason TEXT
);
"""
ADDED_COLUMNS = (
    ("session_id", "TEXT"),
    ("tools", "TEXT NOT NULL DEFAULT '[]'"),
    ("finish_reason", "TEXT"),
)
"""Columns newer than the first schema, added in place to a database made before them."""
INDEXES = """
CREATE INDEX IF NOT EXISTS query_log_created ON query_log (created_at DESC);
CREATE INDEX IF NOT EXISTS query_log_session ON query_log (session_id, created_at);
"""
COLUMNS = (
    "turn_id", "created_at", "question", "mode", "answer", "sources", "rounds", "tool_calls",
    "retries", "first_token_ms", "total_ms", "session_id", "tools", "finish_reason",
)  # fmt: skip


class ToolChip(TypedDict):
    """One tool call as the page shows it: the `tool` frame's fields (scaffold_guard.app.frames)."""

    name: str
    arguments: str
    path: str | None
    ok: bool


@dataclass(frozen=True)
class TurnRow:
    turn_id: str
    question: str
    mode: str
    answer: str
    sources: Sequence[str]
    rounds: int
    tool_calls: int
    retries: int
    first_token_ms: int | None
    total_ms: int
    created_at: float = field(default_factory=time.time)
    session: str | None = None
    tools: Sequence[ToolChip] = ()
    finish_reason: str | None = None


class QueryLog:
    def __init__(self, db_path: Path) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            db_path, timeout=5.0, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL with synchronous=NORMAL: a commit is not fsynced (the WAL is, at checkpoints).
        # The database stays consistent on any crash; a power cut can lose the last turns'
        # rows. FULL fsynced every turn: about 4 ms each, serialized by the lock, which
        # made 200 concurrent turns queue for their commits (docs/benchmarks.md, load).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)
        self._add_missing_columns()
        self._db.executescript(INDEXES)

    def _add_missing_columns(self) -> None:
        present = {row[1] for row in self._db.execute("PRAGMA table_info(query_log)")}
        for name, declaration in ADDED_COLUMNS:
            if name not in present:
                self._db.execute(f"ALTER TABLE query_log ADD COLUMN {name} {declaration}")

    def record(self, row: TurnRow) -> bool:
        """Write the row; False when a row for this turn id already exists."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cursor = self._db.execute(
                    f"INSERT INTO query_log ({', '.join(COLUMNS)})"
                    f" VALUES ({', '.join('?' * len(COLUMNS))})"
                    " ON CONFLICT (turn_id) DO NOTHING",
                    (
                        row.turn_id,
                        row.created_at,
                        row.question,
                        row.mode,
                        row.answer,
                        json.dumps(list(row.sources)),
                        row.rounds,
                        row.tool_calls,
                        row.retries,
                        row.first_token_ms,
                        row.total_ms,
                        row.session,
                        json.dumps(list(row.tools)),
                        row.finish_reason,
                    ),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return cursor.rowcount == 1

    def recent(self, limit: int = 20, session: str | None = None) -> list[dict[str, Any]]:
        """The newest turns first; only `session`'s when it is given."""
        where, args = ("WHERE session_id = ? ", (session,)) if session is not None else ("", ())
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM query_log {where}"
                "ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
        result: list[dict[str, Any]] = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
        for item in result:
            item["sources"] = json.loads(item["sources"])
            item["tools"] = json.loads(item["tools"])
            del item["session_id"]  # a tab's id is not shown to other tabs
        return result

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM query_log").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
