"""The agent's document tools, read, grep and list, over the virtual root /homelab/.

`/homelab/` maps onto the notes folder through `scaffold_guard.app.rag.notes_folder`, shared with
the index. The model's arguments are untrusted (notes can carry prompt injection): `run()`
answers every problem with `ToolOutcome(ok=False, ...)` in words the model can act on.

Deliberate choices:
- Every path is refused before it touches the disk if it could escape (`..`, backslashes,
  invalid UTF-8, control or bidi characters, percent-encoded separators, hidden names),
  then resolved and compared to the root by whole components (`notes_private` is outside).
- Outcome texts name only virtual paths: OS errors in plain words, never their message
  (which carries the real path); refusals do not echo the rejected path.
- Output and disk reads are capped with a visible `[truncated: ...]`, even for a file that
  grew after its size was taken. grep runs under a time budget (the `regex` module's
  `timeout=`, GIL released) on an injectable clock, and `pattern_cost` refuses a pattern
  too costly to compile, which no timeout covers.
- grep skips and counts files too large, binary, not UTF-8 or unreadable, and says
  nothing of what the walk leaves out; an invalid regex is searched as plain text.
- A symlink swapped between check and open is outside the threat model (the model, not
  the folder's owner).
"""

from __future__ import annotations

import codecs
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import regex

from guardrail.json_shapes import is_object
from scaffold_guard.app.rag.notes_folder import (
    LEADS_OUT,
    VIRTUAL_NAME,
    VIRTUAL_ROOT,
    escaped,
    is_plain,
    is_text,
    list_folder,
    real_root,
    resolve_inside,
    virtual_path,
    walk_notes,
)
from scaffold_guard.app.rag.pattern_cost import pattern_problem
from scaffold_guard.app.rag.types import ToolOutcome, ToolSpec

MAX_READ_CHARS = 20_000
MAX_LIST_ENTRIES = 200
MAX_GREP_MATCHES = 50
MAX_GREP_LINE_CHARS = 200
MAX_GREP_FILE_BYTES = 4 << 20
MAX_FULL_READ_BYTES = 4 << 20  # larger files are read only as far as the cap needs
GREP_FILE_TIMEOUT_S = 0.2
GREP_TOTAL_TIMEOUT_S = 1.0
MAX_PATH_CHARS = 1024
MAX_PATTERN_CHARS = 1000

TOOL_SPECS: list[ToolSpec] = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": (
                "Read one note from the homelab notes. Returns the file's text "
                f"(at most {MAX_READ_CHARS} characters)."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": f"Path of the note, e.g. {VIRTUAL_ROOT}backups.md",
                    }
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "grep",
            "description": (
                "Search all notes for a case-insensitive regular expression. Returns "
                "matching lines as path:line: text (at most "
                f"{MAX_GREP_MATCHES} matches)."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Regular expression or plain words, e.g. restic",
                    }
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list",
            "description": (
                "List the notes and folders in a folder of the homelab notes. Folders end in /."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": f"Folder to list, e.g. {VIRTUAL_ROOT} (the default)",
                    }
                },
                "required": [],
                "additionalProperties": False,
            },
        },
    },
]

# tool name -> {argument: required}
_ARGUMENTS: dict[str, dict[str, bool]] = {
    "read": {"path": True},
    "grep": {"pattern": True},
    "list": {"path": False},
}
_EXAMPLES = {
    "read": json.dumps({"path": f"{VIRTUAL_ROOT}backups.md"}),
    "grep": json.dumps({"pattern": "restic"}),
    "list": json.dumps({"path": VIRTUAL_ROOT}),
}

_ENCODED_SPECIAL = re.compile(r"%(?:2e|2f|5c|25|00)", re.IGNORECASE)


@dataclass(frozen=True)
class _Target:
    """A checked path: the real location inside the root and its virtual spelling."""

    real: Path
    parts: tuple[str, ...]

    def virtual(self, folder: bool = False) -> str:
        return virtual_path(self.parts, folder=folder)


def _fail(text: str) -> ToolOutcome:
    return ToolOutcome(ok=False, text=text)


def _printable(text: str) -> str:
    """Text with control and bidirectional-override characters shown as escapes (a tab
    stays a tab)."""
    return escaped(text, keep="\t")


def _short(text: str, limit: int = 40) -> str:
    text = _printable(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class NotesTools:
    """read, grep and list over the virtual root /homelab/, mapped onto one folder.

    `specs` and `run` make it the agent's ToolRunner as it is.
    """

    specs: list[ToolSpec] = TOOL_SPECS

    def __init__(
        self,
        root: Path,
        *,
        max_read_chars: int = MAX_READ_CHARS,
        max_list_entries: int = MAX_LIST_ENTRIES,
        max_grep_matches: int = MAX_GREP_MATCHES,
        max_grep_file_bytes: int = MAX_GREP_FILE_BYTES,
        max_full_read_bytes: int = MAX_FULL_READ_BYTES,
        grep_file_timeout_s: float = GREP_FILE_TIMEOUT_S,
        grep_total_timeout_s: float = GREP_TOTAL_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._root = real_root(root)
        self._max_read_chars = max_read_chars
        self._max_list_entries = max_list_entries
        self._max_grep_matches = max_grep_matches
        self._max_grep_file_bytes = max_grep_file_bytes
        self._max_full_read_bytes = max_full_read_bytes
        self._grep_file_timeout_s = grep_file_timeout_s
        self._grep_total_timeout_s = grep_total_timeout_s
        self._clock = clock

    # --- dispatch --------------------------------------------------------------------

    def run(self, name: str, arguments: str) -> ToolOutcome:
        """Run the tool the model called, from the raw JSON arguments text it sent."""
        spec = _ARGUMENTS.get(name)
        if spec is None:
            return _fail(f"Unknown tool '{_short(name)}'. The tools are read, grep and list.")
        example = _EXAMPLES[name]
        if arguments.strip() == "":
            parsed: object = {}
        else:
            try:
                parsed = json.loads(arguments)
            except (ValueError, RecursionError):
                return _fail(f"The arguments for {name} are not valid JSON. Send e.g. {example}")
        if not is_object(parsed):
            return _fail(f"The arguments for {name} must be a JSON object, e.g. {example}")
        extra = sorted(set(parsed) - set(spec))
        if extra:
            names = ", ".join(_short(k) for k in extra)
            allowed = " and ".join(spec)
            return _fail(f"{name} does not take {names}; it takes only {allowed}. E.g. {example}")
        missing = [k for k, required in spec.items() if required and k not in parsed]
        if missing:
            return _fail(f"{name} needs the argument {missing[0]}, e.g. {example}")
        values: dict[str, str] = {}
        for key, value in parsed.items():
            if not isinstance(value, str):
                return _fail(f"The argument {key} of {name} must be a string, e.g. {example}")
            values[key] = value
        if name == "read":
            return self.read(values["path"])
        if name == "grep":
            return self.grep(values["pattern"])
        return self.list(values.get("path", VIRTUAL_ROOT))

    # --- paths -----------------------------------------------------------------------

    def _resolve(self, raw: str) -> _Target | str:
        """The checked target of a path the model sent, or a plain refusal."""
        text = raw.strip()
        if len(text) > MAX_PATH_CHARS:
            return f"The path is too long (more than {MAX_PATH_CHARS} characters)."
        if not is_text(text):
            return "The path is not valid UTF-8 text."
        if not is_plain(text):
            return (
                "The path contains control characters (such as NUL, a line break or a"
                " bidirectional override)."
            )
        if "\\" in text:
            return "Backslashes are not allowed in paths; separate folders with /."
        if _ENCODED_SPECIAL.search(text):
            return "Percent-encoded characters are not allowed in paths; write the path plainly."
        if text == f"/{VIRTUAL_NAME}" or text.startswith(VIRTUAL_ROOT):
            rel = text[len(VIRTUAL_NAME) + 1 :]
        elif text.startswith(("/", "~")):
            return f"Only paths under {VIRTUAL_ROOT} are available, e.g. {VIRTUAL_ROOT}backups.md"
        elif (text == VIRTUAL_NAME or text.startswith(f"{VIRTUAL_NAME}/")) and not (
            self._root / VIRTUAL_NAME
        ).exists():
            rel = text[len(VIRTUAL_NAME) :]  # "homelab/x.md", the root spelled without its /
        else:
            rel = text  # relative to /homelab/
        parts = tuple(p for p in rel.split("/") if p not in ("", "."))
        if ".." in parts:
            return f"Paths with '..' are not allowed; use paths under {VIRTUAL_ROOT}."
        if any(p.startswith(".") for p in parts):
            return "Hidden files and folders (names starting with '.') are not available."
        real = resolve_inside(self._root, self._root.joinpath(*parts))
        if real == LEADS_OUT:
            return "That path leads outside the notes folder, so it is not available."
        if isinstance(real, str):
            return "That path cannot be opened."
        return _Target(real, parts)

    # --- read ------------------------------------------------------------------------

    def read(self, path: str) -> ToolOutcome:
        """The text of one note, cut at the character cap with a visible marker."""
        target = self._resolve(path)
        if isinstance(target, str):
            return _fail(target)
        virtual = target.virtual()
        real = target.real
        if not target.parts or real.is_dir():
            return _fail(f"{target.virtual(folder=True)} is a folder; use list to see inside it.")
        if not real.exists():
            return _fail(f"There is no note {virtual}. Use list or grep to find notes.")
        if not real.is_file():
            return _fail(f"{virtual} is not a regular file.")
        head = self._max_read_chars * 4  # enough bytes for the cap in any UTF-8 text
        try:
            size = real.stat().st_size
            whole = size <= self._max_full_read_bytes
            with real.open("rb") as handle:
                # Never more than the size allows: a file can grow after its stat.
                data = handle.read(self._max_full_read_bytes + 1 if whole else head)
        except OSError:
            return _fail(f"{virtual} could not be read.")
        if len(data) > self._max_full_read_bytes:
            whole, data, size = False, data[:head], max(size, len(data))
        if b"\x00" in data:
            return _fail(f"{virtual} is a binary file, not a text note.")
        try:
            text = codecs.getincrementaldecoder("utf-8")().decode(data, final=whole)
        except UnicodeDecodeError:
            return _fail(f"{virtual} is not UTF-8 text, so it cannot be shown.")
        text = text.removeprefix("\ufeff")
        if whole and len(text) <= self._max_read_chars:
            return ToolOutcome(ok=True, text=text or "(The note is empty.)", path=virtual)
        shown = text[: self._max_read_chars]
        if whole:
            marker = f"[truncated: showing {len(shown)} of {len(text)} characters]"
        else:
            marker = f"[truncated: showing {len(shown)} characters of a {size}-byte file]"
        return ToolOutcome(ok=True, text=f"{shown}\n{marker}", path=virtual)

    # --- grep ------------------------------------------------------------------------

    def grep(self, pattern: str) -> ToolOutcome:
        """Matching lines of every note as `path:line: text`, under caps and a time budget."""
        if pattern == "":
            return _fail("The pattern is empty; give a word or a regular expression to search.")
        if len(pattern) > MAX_PATTERN_CHARS:
            return _fail(f"The pattern is too long (more than {MAX_PATTERN_CHARS} characters).")
        problem = pattern_problem(pattern)
        if problem is not None:
            return _fail(problem)
        head: list[str] = []
        notes: list[str] = []
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE)
        except (regex.error, OverflowError, ValueError, RecursionError):
            compiled = regex.compile(regex.escape(pattern), regex.IGNORECASE)
            head.append("[the pattern is not a valid regular expression; searched as plain text]")

        lines: list[str] = []
        skipped = 0
        truncated = False
        slow: list[str] = []
        out_of_time = False
        total_deadline = self._clock() + self._grep_total_timeout_s
        for virtual, real in self._notes():
            text = self._grep_text(real)
            if text is None:
                skipped += 1
                continue
            file_deadline = min(self._clock() + self._grep_file_timeout_s, total_deadline)
            for number, raw_line in enumerate(text.split("\n"), start=1):
                line = raw_line.removesuffix("\r")
                remaining = file_deadline - self._clock()
                try:
                    if remaining <= 0:
                        raise TimeoutError
                    match = compiled.search(line, timeout=remaining, concurrent=True)
                except TimeoutError:
                    if self._clock() >= total_deadline:
                        out_of_time = True
                    else:
                        slow.append(virtual)
                    break
                if match is None:
                    continue
                if len(lines) == self._max_grep_matches:
                    truncated = True
                    break
                lines.append(f"{virtual}:{number}: {_snippet(line, match.start())}")
            if truncated or out_of_time:
                break

        if truncated:
            notes.append(
                f"[truncated: stopped after {self._max_grep_matches} matches; "
                "use a narrower pattern]"
            )
        for virtual in slow:
            notes.append(f"[search of {virtual} stopped: the pattern took too long there]")
        if out_of_time:
            notes.append(
                "[search stopped: the pattern took too long; the results may be incomplete]"
            )
        if skipped:
            notes.append(
                f"[skipped {skipped} file(s) that are binary, not UTF-8 text or too large]"
            )
        return ToolOutcome(ok=True, text="\n".join(head + (lines or ["No matches."]) + notes))

    def _notes(self) -> Iterator[tuple[str, Path]]:
        """(virtual path, path) of every note the walk finds, in its order.

        What the walk leaves out (a link out, a loop, a name that is not UTF-8, a folder
        that cannot be listed) is not searched and not mentioned.
        """
        for entry in walk_notes(self._root):
            if entry.skip is None:
                yield VIRTUAL_ROOT + _printable(entry.rel), entry.path

    def _grep_text(self, path: Path) -> str | None:
        """A note's text for grep, or None if it is too large, binary, unreadable or not UTF-8."""
        limit = self._max_grep_file_bytes
        try:
            if not path.is_file() or path.stat().st_size > limit:
                return None
            with path.open("rb") as handle:
                data = handle.read(limit + 1)  # a file can grow after its stat
        except OSError:
            return None
        if len(data) > limit:
            return None
        if b"\x00" in data:
            return None
        try:
            return data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            return None

    # --- list ------------------------------------------------------------------------

    def list(self, path: str = VIRTUAL_ROOT) -> ToolOutcome:
        """The visible entries of one folder, folders first, cut at the entry cap."""
        target = self._resolve(path)
        if isinstance(target, str):
            return _fail(target)
        real = target.real
        if not real.exists():
            return _fail(f"There is no folder {target.virtual(folder=True)}.")
        if not real.is_dir():
            return _fail(f"{target.virtual()} is a file; use read to see it.")
        virtual = target.virtual(folder=True)
        try:
            entries = list_folder(self._root, real)
        except OSError:
            return _fail(f"{virtual} could not be listed.")
        folders = [_printable(e.name) + "/" for e in entries if e.is_folder]
        files = [_printable(e.name) for e in entries if not e.is_folder]
        names = sorted(folders, key=str.casefold) + sorted(files, key=str.casefold)
        shown = names[: self._max_list_entries]
        text = "\n".join([f"Contents of {virtual}:", *(shown or ["(empty)"])])
        if len(names) > len(shown):
            text += f"\n[truncated: showing {len(shown)} of {len(names)} entries]"
        return ToolOutcome(ok=True, text=text, path=virtual)


def _snippet(line: str, at: int) -> str:
    """The line, stripped and cut to MAX_GREP_LINE_CHARS around the match start."""
    stripped = line.lstrip()
    at -= len(line) - len(stripped)
    line = stripped.rstrip()
    if len(line) <= MAX_GREP_LINE_CHARS:
        return _printable(line)
    start = max(0, min(at - MAX_GREP_LINE_CHARS // 4, len(line) - MAX_GREP_LINE_CHARS))
    end = start + MAX_GREP_LINE_CHARS
    piece = _printable(line[start:end])
    return ("…" if start else "") + piece + ("…" if end < len(line) else "")
