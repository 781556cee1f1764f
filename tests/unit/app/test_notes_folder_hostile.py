"""Hostile files in the notes folder, one behaviour each, through the index and the tools.

A huge note, something named `x.md` that is not a file (a socket, a folder, a FIFO behind a
symlink) and a note that grows between its size being taken and its read. The rest of the
hostile folder (symlink loops and links out, names and content that are not UTF-8, binary
notes, FIFOs, unreadable files and folders) is in test_notes_folder.py, and the traversal
spellings the tools refuse in test_tools.py (`REFUSED`).

Tests run as root, where chmod 000 hides nothing: a file that no one can open is made for
real as a Unix socket named `x.md` (open() fails with ENXIO whoever asks).

Memory is measured with tracemalloc (what Python allocated), never time: a loaded machine
makes a test slower, never red.
"""

from __future__ import annotations

import os
import socket
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scaffold_guard.app.rag.grounding import sources
from scaffold_guard.app.rag.index import NotesIndex, SkippedFile
from scaffold_guard.app.rag.tools import MAX_FULL_READ_BYTES, MAX_GREP_FILE_BYTES, NotesTools

from ..helpers.fakes import patient_tools
from ..helpers.files import write

HUGE_BYTES = 50 << 20
TEXT_HEAD = "# Huge\n" + "zebra grazes here\n" * 10_000  # 180 KB of text, then zeros
MEMORY_BOUND = 8 << 20
"""What reading or indexing any single note may allocate: far under the 50 MB note."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    write(folder / "good.md", "# Good\nzebra\n")
    return folder


@pytest.fixture
def huge(root: Path) -> Path:
    """A 50 MB note: text at its head, a sparse file after it, so it costs no disk."""
    path = write(root / "huge.md", TEXT_HEAD)
    with path.open("r+b") as handle:
        handle.truncate(HUGE_BYTES)
    return path


def peak_bytes(action: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def unix_socket(root: Path) -> Iterator[Path]:
    path = root / "x.md"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        yield path


# --- a 50 MB note ----------------------------------------------------------------------


def test_the_index_skips_a_50_mb_note_as_too_large_and_indexes_the_rest(
    root: Path, huge: Path, tmp_path: Path
):
    with NotesIndex(root, tmp_path / "i.db") as index:
        report = index.refresh()
        hits = index.search("zebra")
    assert report.skipped == (SkippedFile("/homelab/huge.md", "larger than 1 MiB"),)
    assert sources(hits) == ["/homelab/good.md"]


def test_indexing_a_50_mb_note_allocates_a_bounded_amount_of_memory(
    root: Path, huge: Path, tmp_path: Path
):
    with NotesIndex(root, tmp_path / "i.db") as index:
        assert peak_bytes(index.refresh) < MEMORY_BOUND


def test_reading_a_50_mb_note_shows_its_head_and_says_how_big_it_is(root: Path, huge: Path):
    outcome = patient_tools(root).read("huge.md")
    assert outcome.ok
    assert outcome.text.startswith("# Huge\nzebra grazes here\n")
    assert outcome.text.endswith(
        f"\n[truncated: showing 20000 characters of a {HUGE_BYTES}-byte file]"
    )


def test_reading_a_50_mb_note_allocates_a_bounded_amount_of_memory(root: Path, huge: Path):
    tools = patient_tools(root)
    assert peak_bytes(lambda: tools.read("huge.md")) < MEMORY_BOUND


def test_grep_skips_a_50_mb_note_and_says_so_within_bounded_memory(root: Path, huge: Path):
    tools = patient_tools(root)
    outcomes: list[str] = []
    assert peak_bytes(lambda: outcomes.append(tools.grep("zebra").text)) < MEMORY_BOUND
    assert outcomes == [
        "/homelab/good.md:2: zebra\n"
        "[skipped 1 file(s) that are binary, not UTF-8 text or too large]"
    ]


# --- a note that grows after its size was taken --------------------------------------------


def stat_reporting(monkeypatch: pytest.MonkeyPatch, name: str, size: int) -> None:
    """Make Path.stat report `size` bytes for files called `name`, as if the file grew
    after its size was taken (a log appended to while it is read)."""
    real_stat = Path.stat

    def stat(self: Path, *args: Any, **kwargs: Any) -> Any:
        result = real_stat(self, *args, **kwargs)
        if self.name != name:
            return result
        fields = list(result)
        fields[6] = size  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(Path, "stat", stat)


def test_read_of_a_note_that_grew_after_its_stat_reads_no_more_than_the_cap(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    """Regression (issue 12): a note whose size said "small" was read whole, however big it
    had become by then."""
    write(root / "grows.md", "y" * (MAX_FULL_READ_BYTES + 1000))
    stat_reporting(monkeypatch, "grows.md", 10)
    tools = patient_tools(root, max_read_chars=100)
    outcome = tools.read("grows.md")
    assert outcome.ok
    assert outcome.text == "y" * 100 + (
        f"\n[truncated: showing 100 characters of a {MAX_FULL_READ_BYTES + 1}-byte file]"
    )


def test_grep_skips_a_note_that_grew_past_its_cap_after_its_stat(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    """Regression (issue 12): grep read such a note whole (`read_bytes()`)."""
    write(root / "grows.md", "zebra\n" * (MAX_GREP_FILE_BYTES // 6 + 10))
    stat_reporting(monkeypatch, "grows.md", 10)
    text = patient_tools(root).grep("zebra").text
    assert "/homelab/grows.md" not in text
    assert "[skipped 1 file(s) that are binary, not UTF-8 text or too large]" in text


# --- things named x.md that are not notes ---------------------------------------------------


def test_a_socket_named_like_a_note_is_skipped_by_the_index(
    root: Path, unix_socket: Path, tmp_path: Path
):
    """A file no one can open, even root (open() of a socket fails with ENXIO)."""
    with NotesIndex(root, tmp_path / "i.db") as index:
        report = index.refresh()
    assert report.skipped == (SkippedFile("/homelab/x.md", "not a regular file"),)


def test_reading_a_socket_named_like_a_note_is_refused_in_words(root: Path, unix_socket: Path):
    outcome = patient_tools(root).read("x.md")
    assert (outcome.ok, outcome.text) == (False, "/homelab/x.md is not a regular file.")


def test_grep_skips_a_socket_named_like_a_note(root: Path, unix_socket: Path):
    text = patient_tools(root).grep("zebra").text
    assert text.startswith("/homelab/good.md:2: zebra\n[skipped 1 file(s)")


def test_a_folder_named_like_a_note_is_a_folder_to_the_index_and_the_tools(
    root: Path, tmp_path: Path
):
    write(root / "x.md" / "inner.md", "# Inner\nzebra\n")
    with NotesIndex(root, tmp_path / "i.db") as index:
        report = index.refresh()
        found = sorted(sources(index.search("zebra")))
    tools = patient_tools(root)
    assert (report.added, report.skipped) == (2, ())
    assert found == ["/homelab/good.md", "/homelab/x.md/inner.md"]
    assert tools.read("x.md").text == "/homelab/x.md/ is a folder; use list to see inside it."
    assert tools.list("x.md").text == "Contents of /homelab/x.md/:\ninner.md"


def test_a_symlink_to_a_fifo_inside_the_folder_never_blocks_a_read_or_the_index(
    root: Path, tmp_path: Path
):
    """The FIFO is reached by its link's name, which ends in .md even if the FIFO's does
    not: opening it would wait for a writer forever."""
    os.mkfifo(root / "pipe")
    (root / "link.md").symlink_to(root / "pipe")
    with NotesIndex(root, tmp_path / "i.db") as index:
        report = index.refresh()
    tools: NotesTools = patient_tools(root)
    assert report.skipped == (SkippedFile("/homelab/link.md", "not a regular file"),)
    assert tools.read("link.md").text == "/homelab/link.md is not a regular file."
    assert tools.grep("zebra").text.startswith("/homelab/good.md:2: zebra\n[skipped 1 file(s)")
