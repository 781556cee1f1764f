"""NotesIndex: BM25 search over heading sections, incremental refresh, skipped notes."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from scaffold_guard.app.rag import index as index_module
from scaffold_guard.app.rag.grounding import sources
from scaffold_guard.app.rag.index import NotesIndex, RefreshReport, SkippedFile, require_fts5
from scaffold_guard.app.rag.types import Hit

from ..conftest import SAMPLE_NOTES
from ..helpers.files import NOT_UTF8, refuse_open_of, write


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    return root


@pytest.fixture
def index(notes: Path, tmp_path: Path) -> Iterator[NotesIndex]:
    with NotesIndex(notes, tmp_path / "index.db", refresh_interval_s=0) as idx:
        yield idx


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


def test_search_returns_hits_with_virtual_paths_best_first(notes: Path, index: NotesIndex):
    write(notes / "backups.md", "# Backups\nrestic runs nightly.\n## Restore\nrestic restore.\n")
    write(notes / "services/nextcloud.md", "# Nextcloud\nbacked up with restic too.\n")
    hits = index.search("restic restore")
    assert hits[0] == Hit(
        path="/homelab/backups.md", heading="Restore", text="restic restore.", score=hits[0].score
    )
    assert "/homelab/services/nextcloud.md" in paths(hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.score > 0 for h in hits)


def test_a_heading_match_outranks_the_same_word_in_a_body(notes: Path, index: NotesIndex):
    write(notes / "a.md", "# Scrubs\nmonthly on the first sunday of each month\n")
    write(notes / "b.md", "# Disks\nscrubs monthly on the first sunday of each month\n")
    for n in range(4):
        write(notes / f"filler{n}.md", f"# Filler {n}\nnothing relevant\n")
    assert paths(index.search("scrubs")) == ["/homelab/a.md", "/homelab/b.md"]


def test_words_match_by_their_stem(notes: Path, index: NotesIndex):
    write(notes / "a.md", "# Certificates\nThe renewal timer renews certificates.\n")
    assert paths(index.search("renewing certificate")) == ["/homelab/a.md"]


def test_a_host_named_with_digits_is_found_by_its_word_nas01(notes: Path, index: NotesIndex):
    write(notes / "storage.md", "# Storage\n`nas01` runs TrueNAS SCALE.\n")
    write(notes / "vpn.md", "# VPN\nwireguard on gw01\n")
    hits = index.search("NAS")
    assert paths(hits) == ["/homelab/storage.md"]
    assert hits[0].text == "`nas01` runs TrueNAS SCALE."  # the alias words are not shown
    assert paths(index.search("nas01")) == ["/homelab/storage.md"]


def test_ip_in_a_question_finds_written_addresses_not_only_the_word(notes: Path, index: NotesIndex):
    write(notes / "hosts.md", "# Hosts\n- nas01: 10.10.20.20\n- gw01: 10.10.10.1\n")
    write(notes / "nodes.md", "# Nodes\n| Node | IP |\n|---|---|\n| pve1 | see hosts |\n")
    for n in range(4):
        write(notes / f"filler{n}.md", f"# Filler {n}\nthe NAS is backed up\n")
    assert paths(index.search("What is the IP of the NAS?"))[0] == "/homelab/hosts.md"


def test_the_ip_of_the_nas_is_found_in_the_sample_notes(sample_index: NotesIndex):
    # The NAS is written `nas01` next to its address; "IP" as a word is only in the table
    # headers of other hosts. network.md used to come fifth, storage.md not at all.
    found = sources(sample_index.search("What is the IP of the NAS?", limit=10))[:3]
    assert {"/homelab/storage.md", "/homelab/network.md"} & set(found)


@pytest.mark.parametrize(("limit", "expected"), [(0, 0), (1, 1), (3, 3), (50, 5)])
def test_search_returns_at_most_limit_hits(
    notes: Path, index: NotesIndex, limit: int, expected: int
):
    for n in range(5):
        write(notes / f"n{n}.md", f"# Note {n}\nrestic\n")
    assert len(index.search("restic", limit=limit)) == expected


def test_search_picks_up_new_notes_on_disk(notes: Path, index: NotesIndex):
    assert index.search("wireguard") == []
    write(notes / "vpn.md", "# VPN\nwireguard on gw01\n")
    assert paths(index.search("wireguard")) == ["/homelab/vpn.md"]


def test_search_waits_for_the_refresh_interval(notes: Path, tmp_path: Path):
    with NotesIndex(notes, tmp_path / "i.db", refresh_interval_s=3600) as idx:
        assert idx.search("wireguard") == []
        write(notes / "vpn.md", "# VPN\nwireguard on gw01\n")
        assert idx.search("wireguard") == []
        idx.refresh()
        assert paths(idx.search("wireguard")) == ["/homelab/vpn.md"]


def test_searches_from_many_threads_agree(notes: Path, index: NotesIndex):
    for n in range(10):
        write(notes / f"n{n}.md", f"# Note {n}\nrestic backup number {n}\n")
    expected = index.search("restic backup", limit=10)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: index.search("restic backup", limit=10), range(160)))
    assert results == [expected] * 160


def _restic_and_filler(notes: Path) -> None:
    """One note about restic among ten that are not: "restic" is a rare word."""
    write(notes / "a.md", "# Backups\nrestic backup nightly\n")
    for n in range(10):
        write(notes / f"filler{n}.md", f"# DNS {n}\nunbound resolver {n}\n")


def _more_restic(notes: Path) -> None:
    for n in range(3):
        write(notes / f"more{n}.md", f"# Copies {n}\nrestic copy {n}\n")


def _fresh_scores(notes: Path, db: Path, query: str) -> list[float]:
    with NotesIndex(notes, db) as fresh:
        return [hit.score for hit in fresh.search(query)]


def test_scores_follow_a_refresh_that_changes_the_notes(notes: Path, tmp_path: Path):
    _restic_and_filler(notes)
    with NotesIndex(notes, tmp_path / "i.db", refresh_interval_s=3600) as idx:
        before = [hit.score for hit in idx.search("restic backup")]  # counts are kept now
        _more_restic(notes)
        idx.refresh()
        after = [hit.score for hit in idx.search("restic backup")]
    assert after[0] != before[0]
    assert after == _fresh_scores(notes, tmp_path / "fresh.db", "restic backup")


def test_scores_follow_a_refresh_by_another_process_on_the_same_file(notes: Path, tmp_path: Path):
    _restic_and_filler(notes)
    db = tmp_path / "shared.db"
    with (
        NotesIndex(notes, db, refresh_interval_s=3600) as reader,
        NotesIndex(notes, db, refresh_interval_s=3600) as writer,
    ):
        before = [hit.score for hit in reader.search("restic backup")]
        _more_restic(notes)
        writer.refresh()  # the reader's own refresh is an hour away
        after = [hit.score for hit in reader.search("restic backup")]
    assert after[0] != before[0]
    assert after == _fresh_scores(notes, tmp_path / "fresh.db", "restic backup")


def test_the_kept_word_counts_are_bounded(
    notes: Path, index: NotesIndex, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(index_module, "MAX_CACHED_COUNTS", 8)
    write(notes / "a.md", "# Words\n" + " ".join(f"word{n}" for n in range(40)) + "\n")
    for n in range(40):
        assert index.search(f"word{n} word{n + 1}")
        assert len(index._counts) <= 8  # pyright: ignore[reportPrivateUsage]


def test_first_refresh_adds_every_note_and_the_next_changes_nothing(notes: Path, index: NotesIndex):
    write(notes / "a.md", "# A\nalpha\n")
    write(notes / "sub/b.md", "# B\nbeta\n")
    assert index.refresh() == RefreshReport(added=2)
    assert index.refresh() == RefreshReport(unchanged=2)


def test_a_changed_note_is_reindexed(notes: Path, index: NotesIndex):
    path = write(notes / "a.md", "# A\nalpha\n")
    index.refresh()
    path.write_text("# A\nomega and more\n", encoding="utf-8")
    assert index.refresh() == RefreshReport(updated=1)
    assert index.search("alpha") == []
    assert paths(index.search("omega")) == ["/homelab/a.md"]


def test_a_touched_note_with_the_same_content_is_not_reindexed(notes: Path, index: NotesIndex):
    path = write(notes / "a.md", "# A\nalpha\n")
    index.refresh()
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert index.refresh() == RefreshReport(unchanged=1)
    assert index.refresh() == RefreshReport(unchanged=1)  # the new mtime was stored


def test_a_deleted_note_is_removed(notes: Path, index: NotesIndex):
    path = write(notes / "a.md", "# A\nalpha\n")
    write(notes / "b.md", "# B\nbeta\n")
    index.refresh()
    path.unlink()
    assert index.refresh() == RefreshReport(removed=1, unchanged=1)
    assert index.search("alpha") == []


@pytest.mark.parametrize(
    "rel", ["notes.txt", "README", ".hidden.md", ".obsidian/workspace.md", "sub/.git/x.md"]
)
def test_non_markdown_and_hidden_files_are_ignored_silently(
    notes: Path, index: NotesIndex, rel: str
):
    write(notes / rel, "# Secret\nzebra\n")
    assert index.refresh() == RefreshReport()
    assert index.search("zebra") == []


def test_markdown_suffix_is_matched_case_insensitively(notes: Path, index: NotesIndex):
    write(notes / "UPPER.MD", "# Upper\nzebra\n")
    assert paths(index.search("zebra")) == ["/homelab/UPPER.MD"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"# Latin-1\ncaf\xe9 zebra\n", "not valid UTF-8 text"),
        (b"# Binary\nzebra\x00\x01\x02\n", "looks binary (contains NUL bytes)"),
        (b"# Huge\nzebra\n" + b"x" * 2048, "larger than 2048 bytes"),
    ],
)
def test_unindexable_notes_are_skipped_with_a_reason(
    notes: Path, tmp_path: Path, content: bytes, reason: str
):
    write(notes / "bad.md", content)
    write(notes / "good.md", "# Good\nfine\n")
    with NotesIndex(notes, tmp_path / "i.db", refresh_interval_s=0, max_file_bytes=2048) as idx:
        report = idx.refresh()
        assert report.added == 1
        assert report.skipped == (SkippedFile("/homelab/bad.md", reason),)
        assert idx.search("zebra") == []


def test_the_default_size_cap_is_one_mib(notes: Path, index: NotesIndex):
    write(notes / "big.md", "# Big\n" + "zebra " * 200_000)
    assert index.refresh().skipped == (SkippedFile("/homelab/big.md", "larger than 1 MiB"),)


def test_a_note_that_becomes_unindexable_is_removed_and_reported(notes: Path, index: NotesIndex):
    path = write(notes / "a.md", "# A\nzebra\n")
    index.refresh()
    path.write_bytes(b"# A\nzebra caf\xe9 now latin-1\n")
    report = index.refresh()
    assert (report.removed, report.skipped) == (
        1,
        (SkippedFile("/homelab/a.md", "not valid UTF-8 text"),),
    )
    assert index.search("zebra") == []


def test_symlinks_leading_out_of_the_folder_are_skipped(
    notes: Path, tmp_path: Path, index: NotesIndex
):
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# Secret\nzebra\n")
    (notes / "link.md").symlink_to(outside / "secret.md")
    (notes / "linkdir").symlink_to(outside, target_is_directory=True)
    report = index.refresh()
    assert report.skipped == (
        SkippedFile("/homelab/linkdir/", "symlink that leads out of the notes folder"),
        SkippedFile("/homelab/link.md", "symlink that leads out of the notes folder"),
    )
    assert index.search("zebra") == []


def test_a_symlinked_note_inside_the_folder_is_indexed_under_its_own_path(
    notes: Path, index: NotesIndex
):
    write(notes / "real.md", "# Real\nzebra\n")
    (notes / "alias.md").symlink_to(notes / "real.md")
    (notes / "sub").symlink_to(notes, target_is_directory=True)  # a loop, never followed
    assert index.refresh() == RefreshReport(added=2)
    assert sorted(paths(index.search("zebra"))) == ["/homelab/alias.md", "/homelab/real.md"]


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p.symlink_to(p.parent / "missing.md"), "could not be read"),
        (lambda p: os.mkfifo(p), "not a regular file"),
    ],
    ids=["dangling-symlink", "fifo"],
)
def test_notes_that_cannot_be_opened_are_skipped(
    notes: Path, index: NotesIndex, make: Any, reason: str
):
    make(notes / "odd.md")
    assert index.refresh().skipped == (SkippedFile("/homelab/odd.md", reason),)


def test_refresh_survives_a_symlink_loop(notes: Path, index: NotesIndex):
    write(notes / "a.md", "# A\nzebra\n")
    (notes / "loop.md").symlink_to(notes / "loop.md")
    (notes / "ping.md").symlink_to(notes / "pong.md")
    (notes / "pong.md").symlink_to(notes / "ping.md")
    assert index.refresh() == RefreshReport(
        added=1,
        skipped=(
            SkippedFile("/homelab/loop.md", "symlink loop"),
            SkippedFile("/homelab/ping.md", "symlink loop"),
            SkippedFile("/homelab/pong.md", "symlink loop"),
        ),
    )


def test_search_survives_a_symlink_loop_made_after_start(notes: Path, index: NotesIndex):
    write(notes / "a.md", "# A\nzebra\n")
    index.refresh()
    (notes / "loop.md").symlink_to(notes / "loop.md")
    assert paths(index.search("zebra")) == ["/homelab/a.md"]


def test_refresh_survives_a_note_name_that_is_not_utf8(notes: Path, index: NotesIndex):
    write(notes / f"{NOT_UTF8}.md", "# Cafe\nzebra\n")
    write(notes / "a.md", "# A\nzebra\n")
    assert index.refresh() == RefreshReport(
        added=1, skipped=(SkippedFile("/homelab/caf\\xe9.md", "name is not valid UTF-8"),)
    )


def test_refresh_survives_a_folder_name_that_is_not_utf8(notes: Path, index: NotesIndex):
    write(notes / NOT_UTF8 / "x.md", "# X\nzebra\n")
    assert index.refresh().skipped == (
        SkippedFile("/homelab/caf\\xe9/", "name is not valid UTF-8"),
    )
    assert index.search("zebra") == []


def test_refresh_reports_a_folder_it_cannot_list(
    notes: Path, index: NotesIndex, monkeypatch: pytest.MonkeyPatch
):
    write(notes / "a.md", "# A\nzebra\n")
    write(notes / "locked" / "b.md", "# B\nzebra\n")
    scandir = os.scandir

    def refuse_locked(path: Any) -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refuse_locked)
    assert index.refresh() == RefreshReport(
        added=1, skipped=(SkippedFile("/homelab/locked/", "folder could not be read"),)
    )


def test_a_note_that_cannot_be_read_is_skipped(
    notes: Path, index: NotesIndex, monkeypatch: pytest.MonkeyPatch
):
    write(notes / "a.md", "# A\nzebra\n")
    write(notes / "locked.md", "# Locked\nzebra\n")
    refuse_open_of(monkeypatch, "locked.md")
    assert index.refresh() == RefreshReport(
        added=1, skipped=(SkippedFile("/homelab/locked.md", "could not be read"),)
    )


def test_refresh_of_a_missing_folder_raises_a_clear_error(tmp_path: Path):
    with (
        NotesIndex(tmp_path / "nope", ":memory:") as idx,
        pytest.raises(FileNotFoundError, match="notes folder not found"),
    ):
        idx.refresh()


def test_the_index_persists_across_instances(notes: Path, tmp_path: Path):
    write(notes / "a.md", "# A\nzebra\n")
    db = tmp_path / "i.db"
    with NotesIndex(notes, db) as first:
        first.refresh()
    with NotesIndex(notes, db) as second:
        assert second.refresh() == RefreshReport(unchanged=1)


def test_an_index_from_another_schema_version_is_rebuilt(notes: Path, tmp_path: Path):
    write(notes / "a.md", "# A\nzebra\n")
    db = tmp_path / "i.db"
    with NotesIndex(notes, db) as first:
        first.refresh()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE notes_meta SET value = '0' WHERE key = 'schema_version'")
    conn.close()
    with NotesIndex(notes, db) as second:
        assert second.refresh() == RefreshReport(added=1)


def test_the_index_shares_its_database_file_politely(notes: Path, tmp_path: Path):
    db = tmp_path / "shared.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE query_log (id INTEGER PRIMARY KEY, q TEXT)")
    conn.close()
    with NotesIndex(notes, db):
        pass
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "query_log" in tables
        assert all(t == "query_log" or t.startswith("notes_") for t in tables)
    finally:
        conn.close()


def test_a_failed_refresh_leaves_the_previous_index_intact(notes: Path, tmp_path: Path):
    write(notes / "a.md", "# A\nzebra\n")
    db = tmp_path / "i.db"
    with NotesIndex(notes, db, refresh_interval_s=3600) as idx:
        idx.refresh()
        saboteur = sqlite3.connect(db)
        saboteur.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON notes_files "
            "BEGIN SELECT RAISE(ABORT, 'boom'); END"
        )
        saboteur.commit()
        write(notes / "a.md", "# A\nchanged to giraffe\n")
        with pytest.raises(sqlite3.IntegrityError, match="boom"):
            idx.refresh()
        assert paths(idx.search("zebra")) == ["/homelab/a.md"]
        assert idx.search("giraffe") == []
        saboteur.execute("DROP TRIGGER boom")
        saboteur.commit()
        saboteur.close()
        assert idx.refresh() == RefreshReport(updated=1)


def test_a_closed_index_refuses_to_search(notes: Path, tmp_path: Path):
    idx = NotesIndex(notes, tmp_path / "i.db")
    idx.close()
    with pytest.raises(sqlite3.ProgrammingError):
        idx.search("zebra")


class _NoFts5Connection(sqlite3.Connection):
    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if "fts5" in sql:
            raise sqlite3.OperationalError("no such module: fts5")
        return super().execute(sql, parameters)


def test_a_sqlite_without_fts5_is_a_clear_runtime_error():
    conn = sqlite3.connect(":memory:", factory=_NoFts5Connection)
    try:
        with pytest.raises(RuntimeError, match="without FTS5"):
            require_fts5(conn)
    finally:
        conn.close()


def test_the_index_does_not_open_without_fts5(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    def no_fts5(conn: sqlite3.Connection) -> None:
        raise RuntimeError("without FTS5")

    monkeypatch.setattr(index_module, "require_fts5", no_fts5)
    with pytest.raises(RuntimeError, match="without FTS5"):
        NotesIndex(tmp_path, tmp_path / "i.db")


def test_the_backup_question_finds_the_backup_runbook(sample_index: NotesIndex):
    hits = sample_index.search("When do backups run?")
    assert "/homelab/backups.md" in sources(hits)
    schedule = next(h for h in hits if h.heading == "Schedule")
    assert "nightly at 02:00" in schedule.text
    assert "verified\nevery Sunday" in schedule.text


def test_the_sample_notes_all_index_cleanly(tmp_path: Path):
    with NotesIndex(SAMPLE_NOTES, tmp_path / "i.db") as idx:
        report = idx.refresh()
    assert report.skipped == ()
    assert report.added >= 12
    for note in SAMPLE_NOTES.rglob("*.md"):
        assert 40 <= len(note.read_text(encoding="utf-8").splitlines()) <= 120, note.name
