"""NotesTools: argument validation, path confinement to /homelab/, output caps, grep budget."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import regex

from scaffold_guard.app.rag.tools import (
    GREP_FILE_TIMEOUT_S,
    GREP_TOTAL_TIMEOUT_S,
    MAX_GREP_LINE_CHARS,
    TOOL_SPECS,
    NotesTools,
)
from scaffold_guard.app.rag.types import ToolOutcome

from ...support.cases import check_each
from ..helpers.fakes import patient_tools
from ..helpers.files import NOT_UTF8, refuse_open_of, write

SECRET = "TOP-SECRET-7f3a"
NOTE = "# Backups\nBackups run nightly at 02:00 with restic.\n"


@dataclass(frozen=True)
class Lab:
    """A notes folder with traps around it: a sibling, an outside folder, symlinks out."""

    tmp: Path
    root: Path
    tools: NotesTools


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    root = tmp_path / "notes"
    write(root / "backups.md", NOTE)
    write(root / "services" / "nextcloud.md", "# Nextcloud\nBacked up by restic at 02:00.\n")
    write(root / "readme.txt", "plain text, not a note\n")
    write(root / ".secret.md", f"# Hidden\n{SECRET} restic\n")
    write(root / ".git" / "config", f"{SECRET} restic\n")
    write(tmp_path / "notes_private" / "a.md", f"# Private\n{SECRET} restic\n")
    write(tmp_path / "outside" / "secret.md", f"# Outside\n{SECRET} restic\n")
    (root / "link-out.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "linkdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "private").symlink_to(tmp_path / "notes_private", target_is_directory=True)
    (root / "link-in.md").symlink_to(root / "backups.md")
    return Lab(tmp=tmp_path, root=root, tools=patient_tools(root))


def assert_safe(outcome: ToolOutcome, lab: Lab) -> None:
    assert SECRET not in outcome.text
    assert str(lab.tmp) not in outcome.text
    assert str(lab.tmp.resolve()) not in outcome.text


# --- TOOL_SPECS --------------------------------------------------------------------------


def test_tool_specs_name_exactly_read_grep_and_list():
    assert [spec["function"]["name"] for spec in TOOL_SPECS] == ["read", "grep", "list"]


@pytest.mark.parametrize(
    ("name", "argument", "required"),
    [("read", "path", ["path"]), ("grep", "pattern", ["pattern"]), ("list", "path", [])],
)
def test_tool_specs_are_openai_function_schemas(name: str, argument: str, required: list[str]):
    spec = next(s for s in TOOL_SPECS if s["function"]["name"] == name)
    assert spec["type"] == "function"
    assert spec["function"]["description"]
    parameters = spec["function"]["parameters"]
    assert parameters["type"] == "object"
    assert parameters["properties"] == {argument: parameters["properties"][argument]}
    assert parameters["properties"][argument]["type"] == "string"
    assert parameters["required"] == required
    json.dumps(spec)  # serialisable as sent to the API


# --- run: argument validation ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("delete", '{"path": "/homelab/backups.md"}', "Unknown tool 'delete'"),
        ("READ", '{"path": "/homelab/backups.md"}', "Unknown tool 'READ'"),
        ("x" * 500, "{}", "Unknown tool 'xxxxxxxx"),
        ("read", "{path: /homelab/backups.md}", "not valid JSON"),
        ("read", '{"path": "/homelab/backups.md"', "not valid JSON"),
        ("read", "[" * 100_000 + "]" * 100_000, "not valid JSON"),
        ("read", '["/homelab/backups.md"]', "must be a JSON object"),
        ("read", '"/homelab/backups.md"', "must be a JSON object"),
        ("read", "null", "must be a JSON object"),
        ("read", "42", "must be a JSON object"),
        ("read", "{}", "needs the argument path"),
        ("read", "", "needs the argument path"),
        ("grep", '{"path": "x"}', "does not take path"),
        ("read", '{"path": "/homelab/backups.md", "mode": "w"}', "does not take mode"),
        ("list", '{"path": "/homelab/", "depth": 3}', "it takes only path"),
        ("read", '{"path": 42}', "must be a string"),
        ("read", '{"path": null}', "must be a string"),
        ("read", '{"path": ["/homelab/backups.md"]}', "must be a string"),
        ("grep", '{"pattern": true}', "must be a string"),
        ("list", '{"path": {"nested": "x"}}', "must be a string"),
    ],
)
def test_run_answers_bad_calls_with_a_plain_error(
    lab: Lab, name: str, arguments: str, message: str
):
    outcome = lab.tools.run(name, arguments)
    assert outcome.ok is False
    assert message in outcome.text
    assert outcome.path is None
    assert len(outcome.text) < 300
    assert_safe(outcome, lab)


@pytest.mark.parametrize(
    ("name", "arguments", "path"),
    [
        ("read", '{"path": "/homelab/backups.md"}', "/homelab/backups.md"),
        ("list", '{"path": "/homelab/services/"}', "/homelab/services/"),
        ("list", "{}", "/homelab/"),
        ("list", "  ", "/homelab/"),
        ("grep", '{"pattern": "restic"}', None),
    ],
)
def test_run_dispatches_valid_calls(lab: Lab, name: str, arguments: str, path: str | None):
    outcome = lab.tools.run(name, arguments)
    assert outcome.ok is True
    assert outcome.path == path


def test_run_read_returns_the_note_text(lab: Lab):
    assert lab.tools.run("read", '{"path": "backups.md"}').text == NOTE


# --- paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "/homelab/backups.md",
        "backups.md",
        "./backups.md",
        "/homelab/./backups.md",
        "/homelab//backups.md",
        "homelab/backups.md",
        "  /homelab/backups.md  ",
        "link-in.md",
    ],
)
def test_read_accepts_the_ways_of_naming_a_note(lab: Lab, spelling: str):
    outcome = lab.tools.read(spelling)
    assert (outcome.ok, outcome.text) == (True, NOTE)
    expected = "/homelab/link-in.md" if "link-in" in spelling else "/homelab/backups.md"
    assert outcome.path == expected


@pytest.mark.parametrize(
    ("spelling", "virtual"),
    [
        ("/homelab", "/homelab/"),
        ("/homelab/", "/homelab/"),
        ("homelab", "/homelab/"),
        ("", "/homelab/"),
        (".", "/homelab/"),
        ("/homelab/services", "/homelab/services/"),
        ("/homelab/services/", "/homelab/services/"),
        ("services", "/homelab/services/"),
        ("services/", "/homelab/services/"),
    ],
)
def test_list_accepts_the_ways_of_naming_a_folder(lab: Lab, spelling: str, virtual: str):
    outcome = lab.tools.list(spelling)
    assert outcome.ok is True
    assert outcome.path == virtual
    assert outcome.text.startswith(f"Contents of {virtual}:")


def test_a_real_homelab_folder_inside_the_root_wins_over_the_root_spelling(tmp_path: Path):
    root = tmp_path / "notes"
    write(root / "homelab" / "x.md", "inner\n")
    write(root / "x.md", "outer\n")
    outcome = patient_tools(root).read("homelab/x.md")
    assert (outcome.text, outcome.path) == ("inner\n", "/homelab/homelab/x.md")


REFUSED = [
    "../../etc/passwd",
    "/etc/passwd",
    "notes/../../x",
    "..",
    "/homelab/..",
    "/homelab/../notes_private/a.md",
    "../notes_private/a.md",
    "services/../../outside/secret.md",
    "..\\x",
    "services\\..\\..\\outside\\secret.md",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%2E%2E/notes_private/a.md",
    "/homelab/%2e%2e/outside/secret.md",
    "..%2foutside/secret.md",
    "%252e%252e/outside/secret.md",
    "backups.md%00.txt",
    "backups.md\x00",
    "backups\n.md",
    "/notes_private/a.md",
    "/homelab_private/a.md",
    "~/secret.md",
    "link-out.md",
    "linkdir/secret.md",
    "/homelab/linkdir/secret.md",
    "private/a.md",
    ".secret.md",
    "/homelab/.secret.md",
    ".git/config",
    "services/.hidden/x.md",
    "x" * 2000,
    # issue 12: the rest of the traversal list, every spelling in one place
    "/homelab/../../etc/passwd",
    "/homelab/./../outside/secret.md",
    "services/./../../outside/secret.md",
    "//etc/passwd",
    "/homelab/../homelab/../outside/secret.md",
    "%2e%2e%5coutside%5csecret.md",
    "%2E%2e%2F",
    "%25%32%65%25%32%65/outside/secret.md",
    "..%00/outside/secret.md",
    "\\\\server\\share\\secret.md",
    "C:\\Windows\\win.ini",
    "/homelab\\..\\outside\\secret.md",
    "file:///etc/passwd",
    "~",
    "~root/.bashrc",
    "/homelab/~/../outside/secret.md",
    "\uff0e\uff0e/outside/secret.md",  # fullwidth full stops: a name, not ".."
    "\u2025/outside/secret.md",  # two dot leader
    "....//....//outside/secret.md",
    "services/\x00/../x",
    "\x00",
    "x\r\n/etc/passwd",
    "a/" * 600,
    "n" * 300 + ".md",  # one name longer than the file system allows
    "/homelab/linkdir/../linkdir/secret.md",
    "up-and-out/secret.md",
]


def test_paths_that_escape_the_root_are_refused(lab: Lab):
    """Each spelling of REFUSED, by `read` and by `list` (one lab: a refusal changes
    nothing); a failure names the tool and the spelling."""
    # a symlinked folder inside that leads back up, and a link through it that leads out
    (lab.root / "services" / "up").symlink_to(lab.root, target_is_directory=True)
    (lab.root / "up-and-out").symlink_to(lab.root / "services" / "up" / "linkdir")

    def refused(case: tuple[str, str]) -> None:
        tool, spelling = case
        outcome = lab.tools.run(tool, json.dumps({"path": spelling}))
        assert outcome.ok is False
        assert outcome.path is None
        assert_safe(outcome, lab)

    cases = [
        (f"{tool} {spelling[:80]!r}", (tool, spelling))
        for tool in ("read", "list")
        for spelling in REFUSED
    ]
    assert check_each(cases, refused) == 2 * len(REFUSED)


def test_real_absolute_paths_into_and_beside_the_root_are_refused(lab: Lab):
    spellings = [
        str(lab.root / "backups.md"),
        str(lab.tmp / "notes_private" / "a.md"),
        str(lab.tmp / "outside" / "secret.md"),
    ]
    for spelling in spellings:
        outcome = lab.tools.read(spelling)
        assert outcome.ok is False
        assert_safe(outcome, lab)


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("../x", "'..' are not allowed"),
        ("/etc/passwd", "Only paths under /homelab/"),
        ("..\\x", "Backslashes"),
        ("%2e%2e/x", "Percent-encoded"),
        ("a\x00b", "control characters"),
        (".env", "Hidden"),
        ("link-out.md", "outside the notes folder"),
        ("x" * 2000, "too long"),
    ],
)
def test_refusals_say_why_in_plain_words(lab: Lab, spelling: str, message: str):
    assert message in lab.tools.read(spelling).text


def test_a_symlink_loop_is_refused(lab: Lab):
    (lab.root / "loop.md").symlink_to(lab.root / "loop.md")
    outcome = lab.tools.read("loop.md")
    assert (outcome.ok, outcome.text) == (False, "That path cannot be opened.")


def test_a_path_that_is_not_utf8_is_refused(lab: Lab):
    write(lab.root / f"{NOT_UTF8}.md", "# Cafe\n")
    outcome = lab.tools.run("read", json.dumps({"path": f"{NOT_UTF8}.md"}))
    assert outcome == ToolOutcome(ok=False, text="The path is not valid UTF-8 text.")


# --- read --------------------------------------------------------------------------------


def test_read_of_a_missing_note_names_the_virtual_path(lab: Lab):
    outcome = lab.tools.read("/homelab/nope.md")
    assert outcome.ok is False
    assert "/homelab/nope.md" in outcome.text
    assert_safe(outcome, lab)


@pytest.mark.parametrize("spelling", ["/homelab/", "services", "/homelab/services/"])
def test_read_of_a_folder_points_to_list(lab: Lab, spelling: str):
    outcome = lab.tools.read(spelling)
    assert outcome.ok is False
    assert "is a folder; use list" in outcome.text


def test_read_of_a_dangling_symlink_is_not_found(lab: Lab):
    (lab.root / "gone.md").symlink_to(lab.root / "never-there.md")
    outcome = lab.tools.read("gone.md")
    assert outcome.ok is False
    assert "There is no note /homelab/gone.md" in outcome.text


def test_read_of_a_fifo_is_refused_without_blocking(lab: Lab):
    os.mkfifo(lab.root / "pipe.md")
    assert lab.tools.read("pipe.md").text == "/homelab/pipe.md is not a regular file."


def test_read_shows_any_text_file_in_the_root(lab: Lab):
    assert lab.tools.read("readme.txt").text == "plain text, not a note\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "/homelab/odd.md is a binary file, not a text note.",
        ),
        (b"# Caf\xe9\nlatin-1\n", "/homelab/odd.md is not UTF-8 text, so it cannot be shown."),
    ],
)
def test_read_refuses_binary_and_non_utf8_files(lab: Lab, content: bytes, message: str):
    write(lab.root / "odd.md", content)
    assert lab.tools.read("odd.md") == ToolOutcome(ok=False, text=message)


def test_read_drops_a_byte_order_mark(lab: Lab):
    write(lab.root / "bom.md", "\ufeff# Title\n".encode())
    assert lab.tools.read("bom.md").text == "# Title\n"


def test_read_of_an_empty_note_says_so(lab: Lab):
    write(lab.root / "empty.md", "")
    assert lab.tools.read("empty.md").text == "(The note is empty.)"


def test_read_truncates_long_notes_with_a_visible_marker(lab: Lab):
    write(lab.root / "long.md", "é" * 250)
    outcome = patient_tools(lab.root, max_read_chars=100).read("long.md")
    assert outcome.ok is True
    assert outcome.text == "é" * 100 + "\n[truncated: showing 100 of 250 characters]"


def test_read_of_a_huge_file_reads_only_its_head(lab: Lab):
    # 3-byte characters, so the head read (4 bytes per character) ends mid-character
    write(lab.root / "huge.md", "€" * 5000)
    tools = patient_tools(lab.root, max_read_chars=100, max_full_read_bytes=1000)
    outcome = tools.read("huge.md")
    assert outcome.text == "€" * 100 + "\n[truncated: showing 100 characters of a 15000-byte file]"


def test_read_has_a_twenty_thousand_character_cap_by_default(lab: Lab):
    write(lab.root / "long.md", "x" * 53_112)
    text = lab.tools.read("long.md").text
    assert text.endswith("\n[truncated: showing 20000 of 53112 characters]")
    assert text.count("x") == 20_000


def test_read_reports_os_errors_without_the_real_path(lab: Lab, monkeypatch: pytest.MonkeyPatch):
    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)
    outcome = lab.tools.read("backups.md")
    assert (outcome.ok, outcome.text) == (False, "/homelab/backups.md could not be read.")


# --- list --------------------------------------------------------------------------------


def test_list_shows_folders_first_and_hides_what_is_out_of_reach(lab: Lab):
    outcome = lab.tools.list()
    assert outcome.text.splitlines() == [
        "Contents of /homelab/:",
        "services/",
        "backups.md",
        "link-in.md",
        "readme.txt",
    ]
    assert_safe(outcome, lab)


def test_list_of_a_subfolder(lab: Lab):
    assert lab.tools.list("services").text == "Contents of /homelab/services/:\nnextcloud.md"


def test_list_shows_symlinked_folders_that_stay_inside(lab: Lab):
    (lab.root / "svc").symlink_to(lab.root / "services", target_is_directory=True)
    assert "svc/" in lab.tools.list().text.splitlines()
    assert lab.tools.list("svc").text == "Contents of /homelab/svc/:\nnextcloud.md"


def test_list_of_an_empty_folder_says_so(lab: Lab):
    (lab.root / "empty").mkdir()
    assert lab.tools.list("empty").text == "Contents of /homelab/empty/:\n(empty)"


def test_list_of_a_file_points_to_read(lab: Lab):
    outcome = lab.tools.list("backups.md")
    assert (outcome.ok, outcome.text) == (
        False,
        "/homelab/backups.md is a file; use read to see it.",
    )


def test_list_of_a_missing_folder_names_the_virtual_path(lab: Lab):
    outcome = lab.tools.list("nope")
    assert (outcome.ok, outcome.text) == (False, "There is no folder /homelab/nope/.")


def test_list_caps_the_entries_with_a_visible_marker(tmp_path: Path):
    for n in range(10):
        write(tmp_path / f"n{n}.md", "x")
    outcome = patient_tools(tmp_path, max_list_entries=3).list()
    assert outcome.text.splitlines() == [
        "Contents of /homelab/:",
        "n0.md",
        "n1.md",
        "n2.md",
        "[truncated: showing 3 of 10 entries]",
    ]


def test_list_hides_names_with_control_or_bidi_characters(tmp_path: Path):
    """Such names are not notes (scaffold_guard.app.rag.notes_folder): a line break would break the
    page's and the log's lines, a bidi override makes `gpj.\\u202eexe.md` read as `gpj.exe.md`."""
    write(tmp_path / "evil\nname.md", "x")
    write(tmp_path / "gpj.\u202eexe.md", "x")
    write(tmp_path / "plain.md", "x")
    lines = patient_tools(tmp_path).list().text.splitlines()
    assert lines[1:] == ["plain.md"]


@pytest.mark.parametrize("path", ["/homelab/gpj.\u202eexe.md", "/homelab/a\u2066b.md"])
def test_read_refuses_a_path_with_a_bidi_control_without_echoing_it(tmp_path: Path, path: str):
    """Regression (issue 12): a bidi override from a tool argument came back raw."""
    write(tmp_path / "gpj.\u202eexe.md", "x")
    outcome = patient_tools(tmp_path).read(path)
    assert outcome.ok is False
    assert "bidirectional override" in outcome.text
    assert "\u202e" not in outcome.text
    assert "\u2066" not in outcome.text


def test_list_hides_names_that_are_not_utf8(lab: Lab):
    write(lab.root / f"{NOT_UTF8}.md", "# Cafe\n")
    (lab.root / NOT_UTF8).mkdir()
    assert lab.tools.list().text.splitlines() == [
        "Contents of /homelab/:",
        "services/",
        "backups.md",
        "link-in.md",
        "readme.txt",
    ]


def test_list_reports_os_errors_without_the_real_path(lab: Lab, monkeypatch: pytest.MonkeyPatch):
    def refuse(path: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "scandir", refuse)
    outcome = lab.tools.list("services")
    assert (outcome.ok, outcome.text) == (False, "/homelab/services/ could not be listed.")


# --- grep --------------------------------------------------------------------------------


def test_grep_lists_matching_lines_with_virtual_paths(lab: Lab):
    outcome = lab.tools.grep("02:00")
    assert outcome == ToolOutcome(
        ok=True,
        text=(
            "/homelab/backups.md:2: Backups run nightly at 02:00 with restic.\n"
            "/homelab/link-in.md:2: Backups run nightly at 02:00 with restic.\n"
            "/homelab/services/nextcloud.md:2: Backed up by restic at 02:00."
        ),
        path=None,
    )


def test_grep_is_a_case_insensitive_regex_search(lab: Lab):
    assert lab.tools.grep(r"RESTIC\b.*0[12]:\d\d").text.splitlines() == [
        "/homelab/services/nextcloud.md:2: Backed up by restic at 02:00."
    ]


def test_grep_never_searches_hidden_or_outside_files(lab: Lab):
    outcome = lab.tools.grep(SECRET)
    assert outcome.text == "No matches."
    assert_safe(lab.tools.grep("restic"), lab)


def test_grep_searches_only_markdown_notes(lab: Lab):
    assert lab.tools.grep("plain text").text == "No matches."


def test_grep_with_an_invalid_regex_searches_plain_text(lab: Lab):
    write(lab.root / "odd.md", "call f(x[ here\n")
    assert lab.tools.grep("f(x[").text.splitlines() == [
        "[the pattern is not a valid regular expression; searched as plain text]",
        "/homelab/odd.md:1: call f(x[ here",
    ]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [("", "The pattern is empty"), ("a" * 1001, "The pattern is too long")],
)
def test_grep_refuses_empty_and_oversized_patterns(lab: Lab, pattern: str, message: str):
    outcome = lab.tools.grep(pattern)
    assert outcome.ok is False
    assert message in outcome.text


def test_grep_caps_the_matches_with_a_visible_marker(tmp_path: Path):
    write(tmp_path / "many.md", "".join(f"restic line {n}\n" for n in range(60)))
    lines = patient_tools(tmp_path).grep("restic").text.splitlines()
    assert len(lines) == 51
    assert lines[49] == "/homelab/many.md:50: restic line 49"
    assert lines[50] == "[truncated: stopped after 50 matches; use a narrower pattern]"


def test_grep_shows_exactly_the_cap_without_a_marker(tmp_path: Path):
    write(tmp_path / "many.md", "".join(f"restic line {n}\n" for n in range(50)))
    lines = patient_tools(tmp_path).grep("restic").text.splitlines()
    assert len(lines) == 50
    assert "truncated" not in lines[-1]


def test_grep_cuts_long_lines_around_the_match(tmp_path: Path):
    write(tmp_path / "long.md", "   " + "a" * 1000 + " NEEDLE " + "b" * 1000 + "\n")
    line = patient_tools(tmp_path).grep("needle").text
    prefix = "/homelab/long.md:1: "
    assert line.startswith(prefix + "…a")
    assert line.endswith("b…")
    assert "NEEDLE" in line
    assert len(line) == len(prefix) + MAX_GREP_LINE_CHARS + 2


def test_grep_keeps_short_lines_whole_and_stripped(tmp_path: Path):
    write(tmp_path / "a.md", "\t  indented restic line\r\n")
    assert patient_tools(tmp_path).grep("line$").text == "/homelab/a.md:1: indented restic line"


@pytest.mark.parametrize(
    "content",
    [b"restic\x00binary\n", b"restic caf\xe9\n", b"restic " + b"x" * 5000],
    ids=["binary", "latin-1", "too-large"],
)
def test_grep_skips_files_it_cannot_search_and_says_so(tmp_path: Path, content: bytes):
    write(tmp_path / "bad.md", content)
    write(tmp_path / "good.md", "restic\n")
    outcome = patient_tools(tmp_path, max_grep_file_bytes=4096).grep("restic")
    assert outcome.text.splitlines() == [
        "/homelab/good.md:1: restic",
        "[skipped 1 file(s) that are binary, not UTF-8 text or too large]",
    ]


def test_grep_skips_dangling_symlinks_and_loops(lab: Lab):
    (lab.root / "gone.md").symlink_to(lab.root / "never-there.md")
    (lab.root / "loop.md").symlink_to(lab.root / "loop.md")
    outcome = lab.tools.grep("nightly")
    assert outcome.text.splitlines()[:2] == [
        "/homelab/backups.md:2: Backups run nightly at 02:00 with restic.",
        "/homelab/link-in.md:2: Backups run nightly at 02:00 with restic.",
    ]
    assert outcome.text.endswith("[skipped 1 file(s) that are binary, not UTF-8 text or too large]")


def test_grep_leaves_out_notes_whose_names_are_not_utf8(lab: Lab):
    write(lab.root / f"{NOT_UTF8}.md", "zebra\n")
    write(lab.root / NOT_UTF8 / "inner.md", "zebra\n")
    assert lab.tools.grep("zebra").text == "No matches."


def test_grep_reports_read_errors_as_skipped_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write(tmp_path / "a.md", "restic\n")
    refuse_open_of(monkeypatch, "a.md")
    outcome = patient_tools(tmp_path).grep("restic")
    assert outcome.text == (
        "No matches.\n[skipped 1 file(s) that are binary, not UTF-8 text or too large]"
    )


CATASTROPHIC = "(a+)+$"
EVIL = "a" * 5000 + "b"  # CATASTROPHIC backtracks on this line for longer than anyone waits
EVIL_LINE = EVIL + "\n"


def test_the_regex_engine_raises_timeout_error_when_a_search_runs_out_of_time():
    # The contract grep's budget rests on. This search cannot finish, so the only way out
    # is the timeout; how long that takes on a loaded machine does not matter.
    with pytest.raises(TimeoutError):
        regex.compile(CATASTROPHIC, regex.IGNORECASE).search(EVIL, timeout=0.01)


class FakeClock:
    """A clock for NotesTools that moves only when the slow engine spends time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class SlowEngine:
    """`regex.compile` replaced: each search records its `timeout=`; a search of EVIL
    spends that whole timeout on `clock` and raises TimeoutError, as the regex engine does."""

    clock: FakeClock
    timeouts: list[float]


class _SlowPattern:
    def __init__(self, real: Any, engine: SlowEngine) -> None:
        self._real = real
        self._engine = engine

    def search(self, line: str, timeout: float | None = None, concurrent: bool = False) -> Any:
        assert timeout is not None, "grep must give the regex engine a timeout"
        # Released, the GIL lets the event loop serve other requests while a search runs.
        assert concurrent, "grep must let the regex engine release the GIL"
        self._engine.timeouts.append(timeout)
        if line == EVIL:
            self._engine.clock.now += timeout
            raise TimeoutError("regex timed out")
        return self._real.search(line)


@pytest.fixture
def slow_engine(monkeypatch: pytest.MonkeyPatch) -> SlowEngine:
    engine = SlowEngine(clock=FakeClock(), timeouts=[])
    real_compile = regex.compile

    def compile_slow(pattern: str, flags: int = 0) -> _SlowPattern:
        return _SlowPattern(real_compile(pattern, flags), engine)

    monkeypatch.setattr(regex, "compile", compile_slow)
    return engine


def test_grep_stops_a_catastrophic_pattern_at_the_total_budget(
    tmp_path: Path, slow_engine: SlowEngine
):
    for n in range(5):
        write(tmp_path / f"evil{n}.md", EVIL_LINE)
    tools = NotesTools(
        tmp_path, grep_file_timeout_s=10, grep_total_timeout_s=0.3, clock=slow_engine.clock
    )
    outcome = tools.grep(CATASTROPHIC)
    assert slow_engine.timeouts == [0.3]  # the first file got what was left of the total
    assert outcome == ToolOutcome(
        ok=True,
        text=(
            "No matches.\n"
            "[search stopped: the pattern took too long; the results may be incomplete]"
        ),
    )


def test_grep_gives_up_on_a_slow_file_and_searches_the_rest(
    tmp_path: Path, slow_engine: SlowEngine
):
    write(tmp_path / "a-evil.md", EVIL_LINE)
    write(tmp_path / "b-fine.md", "aaa\n")
    tools = NotesTools(
        tmp_path, grep_file_timeout_s=0.1, grep_total_timeout_s=5, clock=slow_engine.clock
    )
    assert tools.grep(CATASTROPHIC).text.splitlines() == [
        "/homelab/b-fine.md:1: aaa",
        "[search of /homelab/a-evil.md stopped: the pattern took too long there]",
    ]
    assert slow_engine.timeouts[0] == 0.1


def test_grep_with_no_time_left_stops_before_searching(tmp_path: Path):
    write(tmp_path / "a.md", "restic\n")
    outcome = NotesTools(tmp_path, grep_total_timeout_s=0).grep("restic")
    assert "[search stopped" in outcome.text
    assert "/homelab/a.md" not in outcome.text


def test_the_default_grep_budget_bounds_the_time_given_to_the_regex_engine(
    tmp_path: Path, slow_engine: SlowEngine
):
    for n in range(10):
        write(tmp_path / f"evil{n}.md", EVIL_LINE * 3)
    outcome = NotesTools(tmp_path, clock=slow_engine.clock).grep(CATASTROPHIC)
    assert slow_engine.timeouts[0] == GREP_FILE_TIMEOUT_S
    assert max(slow_engine.timeouts) == pytest.approx(GREP_FILE_TIMEOUT_S)
    assert sum(slow_engine.timeouts) == pytest.approx(GREP_TOTAL_TIMEOUT_S)
    assert outcome.text.endswith(
        "[search stopped: the pattern took too long; the results may be incomplete]"
    )


def test_grep_escapes_control_characters_in_lines(tmp_path: Path):
    write(tmp_path / "a.md", "restic \x1b[31mred\x1b[0m\n")
    expected = "/homelab/a.md:1: restic \\u001b[31mred\\u001b[0m"
    assert patient_tools(tmp_path).grep("red").text == expected


@pytest.mark.parametrize("pattern", ["a{10000003}", "a{1000000000}", "(a{1000}){100}"])
def test_grep_refuses_a_pattern_too_costly_to_compile_before_compiling_it(
    lab: Lab, pattern: str, monkeypatch: pytest.MonkeyPatch
):
    """Regression: `a{10000003}` took 18.8 s and 2.6 GB to compile (the time budget only
    covers searching) and `a{1000000000}` got the app killed for memory."""
    compiled: list[str] = []
    real_compile = regex.compile
    monkeypatch.setattr(regex, "compile", lambda p, *a: compiled.append(p) or real_compile(p, *a))
    outcome = lab.tools.grep(pattern)
    assert outcome.ok is False
    assert "Use a shorter pattern." in outcome.text
    assert compiled == []
