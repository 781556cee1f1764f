"""The notes index: a SQLite FTS5 index of the notes' heading sections, ranked by BM25.

`NotesIndex` keeps one row per section of a markdown note (scaffold_guard/app/rag/sections.py);
`refresh()` brings it in line with the folder, touching only what changed; `search()`
turns free user text into a safe FTS5 query (scaffold_guard/app/rag/query.py) and returns `Hit`s.

Deliberate choices a reader might want to "fix":
- The indexed heading is the heading *trail*, weighted above the body; `Hit.heading` is
  the section's own heading. Alias words have their own column, weighted like the body.
- The porter stemmer is on ("backups" finds "backup").
- Change detection is (mtime_ns, size), then a SHA-256, so a `touch` does not re-index.
- Which files are notes is `notes_folder.walk_notes`'s call, shared with grep; what it or
  the index leaves out is reported, never raised, so one odd file cannot stop the app.
- Tables are prefixed `notes_`, with a schema version table, so the file can be shared;
  the index is a cache, rebuilt on a version change.
- One connection shared by threads under a lock; WAL and a busy timeout so other
  connections do not fail with "database is locked".
- Term document counts are cached between searches (a count query per word was a quarter
  of a search), forgotten on a refresh, on another connection's commit
  (`PRAGMA data_version`) and past `MAX_CACHED_COUNTS` words (words come from users).
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from scaffold_guard.app.rag.aliases import alias_words
from scaffold_guard.app.rag.notes_folder import VIRTUAL_ROOT, real_root, walk_notes
from scaffold_guard.app.rag.query import or_expression, query_terms, quote_term
from scaffold_guard.app.rag.sections import MAX_SECTION_CHARS, Section, split_sections
from scaffold_guard.app.rag.types import Hit

MAX_FILE_BYTES = 1 << 20  # notes larger than 1 MiB are skipped, not indexed
DEFAULT_REFRESH_INTERVAL_S = 2.0
MAX_CACHED_COUNTS = 4096
"""How many words' section counts a NotesIndex keeps between searches (then starts over)."""
HEADING_WEIGHT = 3.0
BODY_WEIGHT = 1.0
ALIAS_WEIGHT = 1.0

_SCHEMA_VERSION = "2"


@dataclass(frozen=True)
class SkippedFile:
    """A note that was not indexed, and why (plain words)."""

    path: str  # virtual path
    reason: str


@dataclass(frozen=True)
class RefreshReport:
    """What one `NotesIndex.refresh()` did, counted in files."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: tuple[SkippedFile, ...] = ()


@dataclass(frozen=True)
class _Known:
    mtime_ns: int
    size: int
    sha256: str


@dataclass(frozen=True)
class _Change:
    rel: str
    mtime_ns: int
    size: int
    sha256: str
    sections: list[Section]


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS notes_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes_files (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS notes_sections (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    ord INTEGER NOT NULL,
    heading TEXT NOT NULL,
    trail TEXT NOT NULL,
    body TEXT NOT NULL,
    aliases TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS notes_sections_path ON notes_sections(path);
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
    trail, body, aliases,
    content='notes_sections', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS notes_sections_ai AFTER INSERT ON notes_sections BEGIN
    INSERT INTO notes_fts(rowid, trail, body, aliases)
        VALUES (new.id, new.trail, new.body, new.aliases);
END;
CREATE TRIGGER IF NOT EXISTS notes_sections_ad AFTER DELETE ON notes_sections BEGIN
    INSERT INTO notes_fts(notes_fts, rowid, trail, body, aliases)
        VALUES ('delete', old.id, old.trail, old.body, old.aliases);
END;
INSERT OR REPLACE INTO notes_meta(key, value) VALUES ('schema_version', '{_SCHEMA_VERSION}');
"""

_DROP = """
DROP TRIGGER IF EXISTS notes_sections_ai;
DROP TRIGGER IF EXISTS notes_sections_ad;
DROP TABLE IF EXISTS notes_fts;
DROP TABLE IF EXISTS notes_sections;
DROP TABLE IF EXISTS notes_files;
DROP TABLE IF EXISTS notes_meta;
"""

_SEARCH = f"""
SELECT s.path, s.heading, s.body,
    bm25(notes_fts, {HEADING_WEIGHT}, {BODY_WEIGHT}, {ALIAS_WEIGHT}) AS rank
FROM notes_fts JOIN notes_sections AS s ON s.id = notes_fts.rowid
WHERE notes_fts MATCH ?
ORDER BY rank, s.path, s.ord
LIMIT ?
"""


def require_fts5(conn: sqlite3.Connection) -> None:
    """Raise a clear RuntimeError if this SQLite build has no FTS5."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.notes_fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.notes_fts5_probe")
    except sqlite3.OperationalError as exc:
        raise RuntimeError(
            f"The SQLite library Python uses (version {sqlite3.sqlite_version}) was built "
            "without FTS5, which the notes index needs. Use a Python whose sqlite3 has FTS5 "
            "(the python.org, uv and Debian/Ubuntu builds do)."
        ) from exc


class NotesIndex:
    """A full-text index of the markdown notes in one folder, kept in a SQLite file."""

    def __init__(
        self,
        notes_dir: Path,
        db_path: Path | str,
        *,
        refresh_interval_s: float = DEFAULT_REFRESH_INTERVAL_S,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_section_chars: int = MAX_SECTION_CHARS,
    ) -> None:
        self._notes_dir = Path(notes_dir)
        self._refresh_interval_s = refresh_interval_s
        self._max_file_bytes = max_file_bytes
        self._max_section_chars = max_section_chars
        self._lock = threading.Lock()
        self._last_refresh: float | None = None
        self._counts: dict[str, int] = {}  # sections holding each word ("" for all sections)
        self._counts_version: int | None = None
        self._conn = sqlite3.connect(
            str(db_path), check_same_thread=False, isolation_level=None, timeout=5.0
        )
        try:
            self._conn.execute("PRAGMA busy_timeout = 5000")
            self._conn.execute("PRAGMA journal_mode = WAL")
            require_fts5(self._conn)
            self._create_schema()
        except BaseException:
            self._conn.close()
            raise

    def __enter__(self) -> NotesIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def _create_schema(self) -> None:
        has_meta = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'notes_meta'"
        ).fetchone()
        if has_meta:
            row = self._conn.execute(
                "SELECT value FROM notes_meta WHERE key = 'schema_version'"
            ).fetchone()
            if row is None or row[0] != _SCHEMA_VERSION:
                self._conn.executescript(_DROP)
        self._conn.executescript(_SCHEMA)

    # --- refresh ---------------------------------------------------------------------

    def refresh(self) -> RefreshReport:
        """Bring the index in line with the notes folder; only changed files are re-read."""
        with self._lock:
            return self._refresh_locked()

    def _refresh_locked(self) -> RefreshReport:
        root = real_root(self._notes_dir)
        if not root.is_dir():
            raise FileNotFoundError(f"notes folder not found: {self._notes_dir}")
        known = {
            path: _Known(mtime_ns, size, sha)
            for path, mtime_ns, size, sha in self._conn.execute(
                "SELECT path, mtime_ns, size, sha256 FROM notes_files"
            )
        }
        changes: list[_Change] = []
        touched: list[tuple[str, int, int]] = []
        skipped: list[SkippedFile] = []
        seen: set[str] = set()
        unchanged = 0

        for entry in walk_notes(root):
            if entry.skip is not None:
                skipped.append(SkippedFile(entry.virtual, entry.skip))
                continue
            outcome = self._examine(entry.rel, entry.path, known.get(entry.rel))
            if isinstance(outcome, SkippedFile):
                skipped.append(outcome)
                continue
            seen.add(entry.rel)
            if isinstance(outcome, _Change):
                changes.append(outcome)
            elif outcome is not None:
                touched.append((entry.rel, outcome[0], outcome[1]))
                unchanged += 1
            else:
                unchanged += 1

        removed = sorted(set(known) - seen)
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for rel in removed:
                conn.execute("DELETE FROM notes_sections WHERE path = ?", (rel,))
                conn.execute("DELETE FROM notes_files WHERE path = ?", (rel,))
            for change in changes:
                conn.execute("DELETE FROM notes_sections WHERE path = ?", (change.rel,))
                conn.executemany(
                    "INSERT INTO notes_sections(path, ord, heading, trail, body, aliases) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (
                            change.rel,
                            n,
                            s.heading,
                            s.trail,
                            s.body,
                            " ".join(alias_words(f"{s.trail}\n{s.body}")),
                        )
                        for n, s in enumerate(change.sections)
                    ],
                )
                conn.execute(
                    "INSERT OR REPLACE INTO notes_files(path, mtime_ns, size, sha256) "
                    "VALUES (?, ?, ?, ?)",
                    (change.rel, change.mtime_ns, change.size, change.sha256),
                )
            conn.executemany(
                "UPDATE notes_files SET mtime_ns = ?, size = ? WHERE path = ?",
                [(mtime_ns, size, rel) for rel, mtime_ns, size in touched],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if removed or changes:
            self._counts.clear()
        self._last_refresh = time.monotonic()
        added = sum(1 for c in changes if c.rel not in known)
        return RefreshReport(
            added=added,
            updated=len(changes) - added,
            removed=len(removed),
            unchanged=unchanged,
            skipped=tuple(skipped),
        )

    def _examine(
        self, rel: str, path: Path, known: _Known | None
    ) -> _Change | SkippedFile | tuple[int, int] | None:
        """What to do with one note: re-index it, skip it, touch its stat (a tuple), or nothing."""
        virtual = VIRTUAL_ROOT + rel
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode):
                return SkippedFile(virtual, "not a regular file")
            if st.st_size > self._max_file_bytes:
                return SkippedFile(virtual, f"larger than {_size_words(self._max_file_bytes)}")
            if known and (known.mtime_ns, known.size) == (st.st_mtime_ns, st.st_size):
                return None
            with path.open("rb") as handle:
                # A note that grows past the cap while it is read is cut here; its size
                # then differs from the stored one, so the next refresh skips it.
                data = handle.read(self._max_file_bytes)
        except OSError:
            return SkippedFile(virtual, "could not be read")
        sha = hashlib.sha256(data).hexdigest()
        if known and known.sha256 == sha:
            return (st.st_mtime_ns, st.st_size)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return SkippedFile(virtual, "not valid UTF-8 text")
        if "\x00" in text:
            return SkippedFile(virtual, "looks binary (contains NUL bytes)")
        sections = split_sections(
            text.removeprefix("\ufeff"), Path(rel).stem, self._max_section_chars
        )
        return _Change(rel, st.st_mtime_ns, st.st_size, sha, sections)

    # --- search ----------------------------------------------------------------------

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        """The note sections that best match free user text, best first (may be empty).

        `Hit.score` is the section's BM25 score divided by the query's IDF mass (see
        `_idf_mass`), so scores of different questions are on one scale.
        """
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        with self._lock:
            if (
                self._last_refresh is None
                or time.monotonic() - self._last_refresh >= self._refresh_interval_s
            ):
                self._refresh_locked()
            rows: list[tuple[str, str, str, float]] = self._conn.execute(
                _SEARCH, (or_expression(terms), limit)
            ).fetchall()
            mass = self._idf_mass(terms) if rows else 1.0
        return [
            Hit(path=VIRTUAL_ROOT + path, heading=heading, text=body, score=-rank / mass)
            for path, heading, body, rank in rows
        ]

    def _idf_mass(self, terms: Sequence[str]) -> float:
        """The sum of the terms' IDF, as FTS5's bm25() computes it (a floor of 1e-6).

        A term no section contains counts with the highest IDF, so a question whose key
        words are not in the notes at all gets a low score even when one common word
        matches.
        """
        (version,) = self._conn.execute("PRAGMA data_version").fetchone()
        if version != self._counts_version or len(self._counts) + len(terms) > MAX_CACHED_COUNTS:
            self._counts.clear()
            self._counts_version = version
        total = self._count("")
        mass = 0.0
        for term in terms:
            n = self._count(term)
            mass += max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6)
        return mass

    def _count(self, term: str) -> int:
        """How many sections hold `term` ("": how many sections there are), kept (see the
        module docstring)."""
        known = self._counts.get(term)
        if known is not None:
            return known
        if term:
            sql, params = (
                "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?",
                (quote_term(term),),
            )
        else:
            sql, params = "SELECT count(*) FROM notes_sections", ()
        (n,) = self._conn.execute(sql, params).fetchone()
        self._counts[term] = n
        return n


def _size_words(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    return f"{n} bytes"
