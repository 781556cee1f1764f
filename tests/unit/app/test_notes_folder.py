"""notes_folder: the virtual root, visible names, symlink confinement, the shared walk, list."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from scaffold_guard.app.rag.grounding import sources
from scaffold_guard.app.rag.index import NotesIndex
from scaffold_guard.app.rag.notes_folder import (
    FOLDER_UNREADABLE,
    LEADS_OUT,
    NAME_NOT_PLAIN,
    NAME_NOT_UTF8,
    SYMLINK_LOOP,
    UNFOLLOWABLE,
    VIRTUAL_ROOT,
    FolderEntry,
    WalkEntry,
    is_text,
    is_visible,
    list_folder,
    real_root,
    resolve_inside,
    shown,
    virtual_path,
    walk_notes,
)
from scaffold_guard.app.rag.tools import NotesTools
from scaffold_guard.app.rag.types import ToolOutcome

from ..helpers.fakes import patient_tools
from ..helpers.files import NOT_UTF8, refuse_open_of, refuse_scandir_of, write

SECRET = "TOP-SECRET-7f3a"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    return folder


def walked(root: Path) -> list[tuple[str, str | None]]:
    return [(entry.rel, entry.skip) for entry in walk_notes(root)]


# --- the virtual root and names ----------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "folder", "virtual"),
    [
        ((), False, "/homelab/"),
        ((), True, "/homelab/"),
        (("backups.md",), False, "/homelab/backups.md"),
        (("services", "nextcloud.md"), False, "/homelab/services/nextcloud.md"),
        (("services",), True, "/homelab/services/"),
    ],
)
def test_virtual_path_spells_parts_under_the_virtual_root(
    parts: tuple[str, ...], folder: bool, virtual: str
):
    assert virtual_path(parts, folder=folder) == virtual


def test_a_walk_entry_is_named_by_its_virtual_path(root: Path):
    assert WalkEntry("sub/a.md", root / "sub" / "a.md").virtual == VIRTUAL_ROOT + "sub/a.md"


@pytest.mark.parametrize(
    ("name", "text", "visible"),
    [
        ("backups.md", True, True),
        ("café.md", True, True),
        (".hidden.md", True, False),
        (f"{NOT_UTF8}.md", False, False),
        ("\ud800", False, False),
        ("bad\nname.md", True, False),
        ("red\x1b[31m.md", True, False),
        ("rtl\u202egnp.md", True, False),
        ("isolate\u2066x.md", True, False),
        ("emoji\u200d.md", True, True),  # a zero-width joiner reorders nothing
    ],
)
def test_a_name_is_visible_when_it_is_plain_text_and_not_hidden(
    name: str, text: bool, visible: bool
):
    assert (is_text(name), is_visible(name)) == (text, visible)


@pytest.mark.parametrize(
    ("name", "spelled"),
    [
        ("café.md", "café.md"),
        (f"{NOT_UTF8}.md", "caf\\xe9.md"),
        ("a\ud800", "a\\ud800"),
        ("bad\nname.md", "bad\\u000aname.md"),
        ("rtl\u202egnp.md", "rtl\\u202egnp.md"),
    ],
)
def test_shown_spells_a_name_as_one_line_of_valid_text(name: str, spelled: str):
    assert shown(name) == spelled


# --- resolve_inside ----------------------------------------------------------------------


def test_resolve_inside_follows_symlinks_that_stay_inside(root: Path):
    write(root / "real.md", "x")
    (root / "alias.md").symlink_to(root / "real.md")
    assert resolve_inside(root, root / "alias.md") == root / "real.md"


def test_resolve_inside_refuses_symlinks_that_lead_out(root: Path, tmp_path: Path):
    write(tmp_path / "notes_private" / "a.md", "x")  # a sibling whose name starts like root's
    (root / "private").symlink_to(tmp_path / "notes_private", target_is_directory=True)
    assert resolve_inside(root, root / "private" / "a.md") == LEADS_OUT


@pytest.mark.parametrize("loop", [("loop.md", "loop.md"), ("ping.md", "pong.md")])
def test_resolve_inside_names_a_symlink_loop(root: Path, loop: tuple[str, str]):
    first, second = loop
    (root / first).symlink_to(root / second)
    if second != first:
        (root / second).symlink_to(root / first)
    assert resolve_inside(root, root / first) == SYMLINK_LOOP


@pytest.mark.parametrize("rel", ["missing.md", "gone.md", "file.md/below"])
def test_resolve_inside_judges_a_missing_path_by_where_it_points(root: Path, rel: str):
    write(root / "file.md", "x")
    (root / "gone.md").symlink_to(root / "never-there.md")
    assert isinstance(resolve_inside(root, root / rel), Path)


def test_resolve_inside_names_a_symlink_it_cannot_follow(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    def refuse(self: Path, strict: bool = False) -> Path:
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "resolve", refuse)
    assert resolve_inside(root, root / "locked" / "a.md") == UNFOLLOWABLE


def test_real_root_follows_a_symlinked_notes_folder(root: Path, tmp_path: Path):
    (tmp_path / "link").symlink_to(root, target_is_directory=True)
    assert real_root(tmp_path / "link") == root


def test_real_root_of_a_symlink_loop_is_the_path_as_given(tmp_path: Path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert real_root(tmp_path / "loop") == tmp_path / "loop"


# --- walk_notes --------------------------------------------------------------------------


def test_walk_yields_a_folders_notes_before_its_subfolders_in_name_order(root: Path):
    for rel in ["b.md", "a.md", "z/y.md", "z/x.md", "m/deep/n.md", "m/c.md"]:
        write(root / rel, "x")
    assert walked(root) == [
        ("a.md", None),
        ("b.md", None),
        ("m/c.md", None),
        ("m/deep/n.md", None),
        ("z/x.md", None),
        ("z/y.md", None),
    ]


@pytest.mark.parametrize(
    "rel", ["notes.txt", "README", ".hidden.md", ".obsidian/w.md", "sub/.git/x.md", "x.md.bak"]
)
def test_walk_ignores_hidden_names_and_files_that_are_not_markdown(root: Path, rel: str):
    write(root / rel, "x")
    assert walked(root) == []


def test_walk_matches_the_markdown_suffix_in_any_case(root: Path):
    write(root / "UPPER.MD", "x")
    assert walked(root) == [("UPPER.MD", None)]


def test_walk_takes_symlinked_notes_inside_but_never_enters_symlinked_folders(root: Path):
    write(root / "real.md", "x")
    (root / "alias.md").symlink_to(root / "real.md")
    (root / "again").symlink_to(root, target_is_directory=True)
    assert walked(root) == [("alias.md", None), ("real.md", None)]


def test_walk_reports_what_it_leaves_out_and_why(root: Path, tmp_path: Path):
    write(tmp_path / "outside" / "secret.md", "x")
    (root / "out.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "outdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "loop.md").symlink_to(root / "loop.md")
    write(root / f"{NOT_UTF8}.md", "x")
    write(root / NOT_UTF8 / "inner.md", "x")
    assert walked(root) == [
        ("caf\\xe9/", NAME_NOT_UTF8),
        ("outdir/", LEADS_OUT),
        ("caf\\xe9.md", NAME_NOT_UTF8),
        ("loop.md", SYMLINK_LOOP),
        ("out.md", LEADS_OUT),
    ]


def test_walk_reports_a_folder_it_cannot_list_and_goes_on(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    write(root / "locked" / "a.md", "x")
    write(root / "open" / "b.md", "x")
    refuse_scandir_of(monkeypatch, "locked")
    assert walked(root) == [("locked/", FOLDER_UNREADABLE), ("open/b.md", None)]


def test_walk_of_a_root_it_cannot_list_reports_the_root(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    refuse_scandir_of(monkeypatch, root.name)
    assert [(e.virtual, e.skip) for e in walk_notes(root)] == [("/homelab/", FOLDER_UNREADABLE)]


DEPTH = 1200  # past Python's default recursion limit of 1000


@pytest.fixture
def deep_root(root: Path) -> Iterator[Path]:
    """A note DEPTH folders down; created and removed one level at a time (no recursion)."""
    folders = [root]
    for _ in range(DEPTH):
        folders.append(folders[-1] / "d")
        folders[-1].mkdir()
    note = write(folders[-1] / "deep.md", "# Deep\nzebra\n")
    yield root
    note.unlink()
    for folder in reversed(folders[1:]):
        folder.rmdir()


def test_walk_reaches_folders_nested_past_the_recursion_limit(deep_root: Path):
    assert walked(deep_root) == [("d/" * DEPTH + "deep.md", None)]


# --- list_folder -------------------------------------------------------------------------


def test_list_folder_shows_the_visible_entries_and_which_are_folders(root: Path, tmp_path: Path):
    write(root / "a.md", "x")
    write(root / "notes.txt", "x")
    write(root / "sub" / "b.md", "x")
    (root / "alias").symlink_to(root / "sub", target_is_directory=True)
    (root / "gone.md").symlink_to(root / "never-there.md")
    write(root / ".hidden.md", "x")
    write(root / f"{NOT_UTF8}.md", "x")
    (root / "loop.md").symlink_to(root / "loop.md")
    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    assert sorted(list_folder(root, root), key=lambda e: e.name) == [
        FolderEntry("a.md", is_folder=False),
        FolderEntry("alias", is_folder=True),
        FolderEntry("gone.md", is_folder=False),
        FolderEntry("notes.txt", is_folder=False),
        FolderEntry("sub", is_folder=True),
    ]


def test_list_folder_of_a_folder_it_cannot_list_raises_os_error(
    root: Path, monkeypatch: pytest.MonkeyPatch
):
    (root / "locked").mkdir()
    refuse_scandir_of(monkeypatch, "locked")
    with pytest.raises(PermissionError):
        list_folder(root, root / "locked")


# --- the index and the tools over one hostile folder -------------------------------------


@pytest.fixture
def hostile(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two good notes among everything a notes folder can hold that is not a note."""
    write(root / "good.md", "# Good\nzebra\n")
    write(root / "sub" / "inner.md", "# Inner\nzebra\n")
    write(tmp_path / "outside" / "secret.md", f"# Secret\n{SECRET} zebra\n")
    write(tmp_path / "notes_private" / "a.md", f"# Private\n{SECRET} zebra\n")
    (root / "out.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "outdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "private").symlink_to(tmp_path / "notes_private", target_is_directory=True)
    (root / "loop.md").symlink_to(root / "loop.md")
    (root / "loopdir").symlink_to(root / "loopdir")
    (root / "ping.md").symlink_to(root / "pong.md")
    (root / "pong.md").symlink_to(root / "ping.md")
    (root / "up").symlink_to(root, target_is_directory=True)
    (root / "gone.md").symlink_to(root / "never-there.md")
    os.mkfifo(root / "pipe.md")
    write(root / "binary.md", b"zebra\x00\x01\x02")
    write(root / "latin1.md", b"caf\xe9 zebra\n")
    write(root / f"{NOT_UTF8}.md", "# Cafe\nzebra\n")
    write(root / NOT_UTF8 / "inner.md", "# Cafe\nzebra\n")
    write(root / "locked.md", "# Locked\nzebra\n")
    write(root / "lockeddir" / "inner.md", "# Locked\nzebra\n")
    refuse_scandir_of(monkeypatch, "lockeddir")
    refuse_open_of(monkeypatch, "locked.md")
    return root


def tool_outcomes(tools: NotesTools) -> list[ToolOutcome]:
    """grep, list and read of everything in the hostile folder, as the model would send them."""
    names = [
        "good.md", "sub", "out.md", "outdir", "private", "loop.md", "loopdir", "ping.md",
        "up", "up/good.md", "gone.md", "pipe.md", "binary.md", "latin1.md", f"{NOT_UTF8}.md",
        NOT_UTF8, "locked.md", "lockeddir",
    ]  # fmt: skip
    outcomes = [tools.run("grep", '{"pattern": "zebra"}'), tools.run("list", "{}")]
    for name in names:
        for tool in ("read", "list"):
            outcomes.append(tools.run(tool, json.dumps({"path": name})))
    return outcomes


def test_a_hostile_folder_breaks_neither_the_index_nor_the_tools(hostile: Path, tmp_path: Path):
    with NotesIndex(hostile, tmp_path / "i.db", refresh_interval_s=0) as index:
        index.refresh()
        hits = index.search("zebra", limit=50)
    outcomes = tool_outcomes(patient_tools(hostile))
    assert sorted(sources(hits)) == ["/homelab/good.md", "/homelab/sub/inner.md"]
    for outcome in outcomes:
        outcome.text.encode("utf-8")  # valid text: storable, sendable as JSON, showable
        assert SECRET not in outcome.text
        assert str(tmp_path) not in outcome.text


def test_the_index_reports_everything_in_a_hostile_folder_it_leaves_out(
    hostile: Path, tmp_path: Path
):
    with NotesIndex(hostile, tmp_path / "i.db") as index:
        report = index.refresh()
    assert report.added == 2
    assert sorted(s.path for s in report.skipped) == [
        "/homelab/binary.md",
        "/homelab/caf\\xe9.md",
        "/homelab/caf\\xe9/",
        "/homelab/gone.md",
        "/homelab/latin1.md",
        "/homelab/locked.md",
        "/homelab/lockeddir/",
        "/homelab/loop.md",
        "/homelab/out.md",
        "/homelab/outdir/",
        "/homelab/ping.md",
        "/homelab/pipe.md",
        "/homelab/pong.md",
        "/homelab/private/",
    ]


def test_the_index_and_grep_search_the_same_notes(hostile: Path, tmp_path: Path):
    with NotesIndex(hostile, tmp_path / "i.db") as index:
        indexed = sorted(sources(index.search("zebra", limit=50)))
    grep_lines = patient_tools(hostile).grep("zebra").text.splitlines()
    grepped = sorted(line.split(":", 1)[0] for line in grep_lines if line.startswith("/"))
    assert indexed == grepped


def test_refresh_and_grep_survive_folders_nested_past_the_recursion_limit(
    deep_root: Path, tmp_path: Path
):
    deep = "/homelab/" + "d/" * DEPTH + "deep.md"
    with NotesIndex(deep_root, tmp_path / "i.db") as index:
        assert sources(index.search("zebra")) == [deep]
    assert patient_tools(deep_root).grep("zebra").text == f"{deep}:2: zebra"


def test_walk_reports_names_with_control_or_bidi_characters_and_never_yields_them(root: Path):
    """Issue 12: such names reached sources (a raw newline) and tool results (a bidi
    override that makes `gnp.md` read as `png.md`)."""
    write(root / "bad\nname.md", "restic")
    write(root / "rtl\u202egnp.md", "restic")
    write(root / "ok.md", "restic")
    assert walked(root) == [
        ("bad\\u000aname.md", NAME_NOT_PLAIN),
        ("ok.md", None),
        ("rtl\\u202egnp.md", NAME_NOT_PLAIN),
    ]
