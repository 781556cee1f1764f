"""Retrieval over the notes folder: a SQLite FTS5 index of heading sections, ranked by BM25.

`NotesIndex` keeps one table row per section of a markdown note and an FTS5 index over it.
`refresh()` brings the index in line with the folder and touches only what changed;
`search()` turns free user text into a safe FTS5 query and returns `Hit`s, best first.

Deliberate choices:
- Sections, not files or fixed windows. Every ATX heading (`#` to `######`) starts a section
  that runs to the next heading; `#` lines inside fenced code blocks are shell comments,
  not headings. Text before the first heading becomes a section titled with the note's
  title. A section longer than `MAX_SECTION_CHARS` is cut on paragraph boundaries (then
  lines, then characters, only if a single paragraph or line is that long).
- The indexed heading column is the heading *trail* ("Backups / Schedule"), so a
  "Schedule" section still matches a question about backups. It is weighted above the body
  (`HEADING_WEIGHT`). `Hit.heading` is the section's own heading.
- User text never reaches FTS5 syntax. It is cut into alphanumeric words, stop-words are
  dropped and each remaining word is quoted and ORed, so quotes, `*`, `NEAR`, `AND`,
  parentheses or column filters in a question are plain words or nothing.
- A mock_llm trigger (`[[mock:FLOW#KEY]]`) in a question is not part of it: its words
  would count as words the notes never use and pull a real question under the grounding
  threshold, so tests and the conformance kit would see other modes than users do.
  `servekit.trigger_grammar.strip_triggers` decides what a trigger is (typos, unclosed ones
  and any case included), on the grammar the mock reads too, so the two sides cannot
  disagree.
- The porter stemmer is on, so "backups" finds "backup" and "renewing" finds "renewal".
- Each section also indexes alias words (`alias_words`), words it means without writing
  them on their own, in a column of their own weighted like the body and never shown
  (`Hit.text` is the body). A word that mixes letters and digits adds its letter runs, so
  a host `nas01` is found by "NAS" (the tokenizer keeps `nas01` whole) and `pve2` by
  "pve". A written IP address (`10.10.20.20`, `10.10.20.0/24`, `fd00::20`) adds the word
  "ip", so "IP" in a question finds where addresses are, not only where the word is
  written (table headers, `ip=` in a command). The two go together: "nas" is then in a
  quarter of the sample sections, and a rarely written "ip" would outweigh it and rank
  tables of other hosts' addresses first ("What is the IP of the NAS?"). Questions are not
  split, so "nas01" in a question still matches `nas01` itself.
- Change detection is (mtime_ns, size) first and a SHA-256 of the content second, so a
  `touch` does not re-index a note.
- Which files are notes is `app.rag.notes_folder.walk_notes`'s call, shared with the
  agent's grep. What it leaves out with a reason (symlinks that lead out of the folder or
  loop, names that are not UTF-8, folders that cannot be listed) is listed in the report,
  as are notes that cannot be indexed (not valid UTF-8, binary, larger than the cap,
  unreadable, not a regular file). None of it raises, so one odd file cannot stop the app
  from starting or every later search from working. Symlinked folders are not followed.
- Table names are prefixed `notes_` and the schema version lives in its own table, so the
  index can share a database file with other tables. The index is a cache: on a schema
  version change it is dropped and rebuilt.
- One connection, shared by threads and guarded by a lock; WAL and a busy timeout so other
  connections to the same file (a second process, the query log) do not fail with
  "database is locked".
- The document counts behind a score's IDF mass (how many sections hold each term) are
  kept between searches: one count query per question word was a quarter of a search's
  time. They are forgotten when a refresh changes the index, when another connection
  commits to the file (`PRAGMA data_version`), and when `MAX_CACHED_COUNTS` words are
  held (words come from users).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from app.rag.notes_folder import VIRTUAL_ROOT, real_root, walk_notes
from app.rag.types import Hit
from servekit.trigger_grammar import strip_triggers

DEFAULT_GROUNDING_THRESHOLD = 0.55
"""The score the best hit needs for a question to count as grounded in the notes.

A hit's score is its BM25 score divided by the IDF mass of the question's words (see
`NotesIndex.search`), so it measures how much of the question the section accounts for,
and a word no note contains weighs the most. Chosen by scoring 49 questions the bundled
sample notes answer and 49 they do not (tests/unit/test_retrieval.py pins a sample of
both sides). The figures below were measured again when the alias words (module
docstring) came in; they moved by 0.02 at most:
- On-topic questions scored about 0.6 to 1.9 ("when do backups run?" 1.62, "how is DNS set
  up for the local zone" 1.11, "what is the retention policy for backups" 0.60). The one
  miss was "what is the guest wifi subnet" at 0.39: the notes spell it "Wi-Fi".
- Off-topic questions mostly match nothing ("what is the capital of France": no hits) or
  match one common word next to words the notes never use ("write me a poem about cats"
  0.30, "what time is it in Tokyo" 0.53). Misses: "what is the speed of light" at 0.60
  ("lights" in the Home Assistant note), one-word questions whose word is in the notes
  ("what's your name" 1.57, "what is 2+2" 1.28) and general questions made of the notes'
  words ("what is an IP address" 1.50, 0.64 before every written address counted as
  "ip"): a lexical score cannot tell those from "what VLANs are there".
0.55 sits in the gap between the bulk of both sides. Words only match as the porter
stemmer sees them, so a much larger or differently worded notes folder may want its own
value.
"""

MAX_FILE_BYTES = 1 << 20  # notes larger than 1 MiB are skipped, not indexed
MAX_SECTION_CHARS = 1500
DEFAULT_REFRESH_INTERVAL_S = 2.0
MAX_CACHED_COUNTS = 4096
"""How many words' section counts a NotesIndex keeps between searches (then starts over)."""
HEADING_WEIGHT = 3.0
BODY_WEIGHT = 1.0
ALIAS_WEIGHT = 1.0
MAX_QUERY_TERMS = 32
MAX_TERM_CHARS = 64

_SCHEMA_VERSION = "2"
_TITLE_SEPARATOR = " / "

_STOP_WORDS_TEXT = """
    a about above after again all am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me
    more most my myself no nor not now of off on once only or other our ours out over own
    same she should so some such than that the their theirs them then there
    these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself
    also get give got help know let like need please show tell us want explain
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

_WORD = re.compile(r"[^\W_]+")
_LETTER_OR_DIGIT_RUN = re.compile(r"[^\W\d_]+|\d+")
# What may be a written IP address (a /prefix or :port after it is left alone); `ipaddress`
# has the last word, so 300.1.1.1, a time such as 02:00:00 or a MAC address is not one.
_ADDRESS = re.compile(
    r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\w)"
    r"|(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])"
)
IP_ALIAS = "ip"
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


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
class Section:
    """One indexed piece of a note: its own heading, the heading trail, and its text."""

    heading: str
    trail: str
    body: str


# --- chunking ----------------------------------------------------------------------------


def split_sections(
    text: str, fallback_title: str, max_chars: int = MAX_SECTION_CHARS
) -> list[Section]:
    """Cut a markdown note into heading sections; see the module docstring for the rules."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    headings = _find_headings(lines)
    title = next((h for _, _, h in headings if h), fallback_title)

    sections: list[Section] = []
    # the text before the first heading belongs to the note's title
    first = headings[0][0] if headings else len(lines)
    _add_section(sections, title, title, lines[:first], max_chars)
    stack: list[tuple[int, str]] = []  # (level, heading) of the open headings
    for n, (i, level, text) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else len(lines)
        heading = text or title
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        trail = _TITLE_SEPARATOR.join(h for _, h in stack)
        _add_section(sections, heading, trail, lines[i + 1 : end], max_chars)
    return sections


def _find_headings(lines: Sequence[str]) -> list[tuple[int, int, str]]:
    """(line index, level, heading text) of every ATX heading outside fenced code."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        heading_match = _HEADING.match(line)
        if heading_match:
            found.append((i, len(heading_match.group(1)), (heading_match.group(2) or "").strip()))
    return found


def _add_section(
    sections: list[Section], heading: str, trail: str, lines: Sequence[str], max_chars: int
) -> None:
    body = "\n".join(lines).strip("\n").rstrip()
    if not body.strip():
        return
    for piece in _split_long(body, max_chars):
        sections.append(Section(heading=heading, trail=trail, body=piece))


def _split_long(body: str, max_chars: int) -> list[str]:
    """Pieces of at most max_chars: whole paragraphs where possible, then lines, then cuts."""
    if len(body) <= max_chars:
        return [body]
    units: list[tuple[str, str]] = []  # (text, separator that joined it to the previous one)
    for paragraph in _PARAGRAPH_BREAK.split(body):
        if len(paragraph) <= max_chars:
            units.append((paragraph, "\n\n"))
            continue
        for n, line in enumerate(paragraph.split("\n")):
            separator = "\n\n" if n == 0 else "\n"
            cuts = [line[k : k + max_chars] for k in range(0, len(line), max_chars)] or [""]
            units.extend((cut, separator if k == 0 else "") for k, cut in enumerate(cuts))
    pieces: list[str] = []
    current = ""
    for text, separator in units:
        if current and len(current) + len(separator) + len(text) > max_chars:
            pieces.append(current)
            current = text
        else:
            current = f"{current}{separator}{text}" if current else text
    pieces.append(current)
    return [p.strip("\n") for p in pieces if p.strip()]


def alias_words(text: str) -> list[str]:
    """Words a text means without writing them on their own; see the module docstring.

    `IP_ALIAS` once per written IPv4 or IPv6 address, then, in the rest of the text, the
    letter runs of every word that mixes letters and digits ("nas01" -> "nas", "X11SCH-F"
    -> "x", "sch"), lower-cased.
    """
    aliases: list[str] = []

    def address(match: re.Match[str]) -> str:
        if not _is_ip_address(match.group()):
            return match.group()
        aliases.append(IP_ALIAS)
        return " "  # so the hex of "fd00::20" does not add "fd"

    rest = _ADDRESS.sub(address, text)
    for word in _WORD.findall(rest):
        runs = _LETTER_OR_DIGIT_RUN.findall(word)
        if len(runs) > 1:
            aliases.extend(run.lower() for run in runs if not run.isdigit())
    return aliases


def _is_ip_address(candidate: str) -> bool:
    if not any(c.isdigit() for c in candidate):
        return False  # "bad::cafe" is a valid IPv6 address, but more likely words
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return True


# --- queries -----------------------------------------------------------------------------


def query_terms(query: str) -> list[str]:
    """The words of a user question that are worth searching for, lower-cased, in order."""
    terms: list[str] = []
    for word in _WORD.findall(strip_triggers(query).lower()):
        if word in STOP_WORDS or word in terms or len(word) > MAX_TERM_CHARS:
            continue
        if len(word) == 1 and not word.isdigit():
            continue  # the "s" of "what's", the "t" of "don't"
        terms.append(word)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms


def match_expression(query: str) -> str | None:
    """A safe FTS5 MATCH expression for free user text, or None if nothing is left to search."""
    terms = query_terms(query)
    return _or_expression(terms) if terms else None


def _or_expression(terms: Sequence[str]) -> str:
    return " OR ".join(_quote(term) for term in terms)


def _quote(term: str) -> str:
    # Terms hold only letters and digits, so there is no quote to escape; doubling keeps
    # that true even if the word pattern changes.
    return '"' + term.replace('"', '""') + '"'


def is_grounded(hits: Sequence[Hit], threshold: float = DEFAULT_GROUNDING_THRESHOLD) -> bool:
    """Whether the notes have something relevant: the best hit's score reaches the threshold."""
    return any(hit.score >= threshold for hit in hits)


def sources(hits: Sequence[Hit]) -> list[str]:
    """The distinct virtual paths of the hits, in rank order."""
    return list(dict.fromkeys(hit.path for hit in hits))


# --- the index ---------------------------------------------------------------------------


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
                _SEARCH, (_or_expression(terms), limit)
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
            sql, params = "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", (_quote(term),)
        else:
            sql, params = "SELECT count(*) FROM notes_sections", ()
        (n,) = self._conn.execute(sql, params).fetchone()
        self._counts[term] = n
        return n


def _size_words(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    return f"{n} bytes"
