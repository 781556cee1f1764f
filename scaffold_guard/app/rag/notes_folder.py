"""The notes folder as the app sees it: the virtual root /homelab/ and one walk over its notes.

The one place that decides what is in the folder, for both the index and the agent's
tools, so they cannot drift apart: the virtual root, which names are visible, where a
symlink may lead, the walk over the notes and one folder's entries.

Deliberate choices:
- A name is hidden if it starts with a dot, is not valid UTF-8 (SQLite and the page refuse
  lone surrogates), or holds a control or bidi character (they break the log's lines, and
  U+202E makes `gnp.md` read as `png.md`); the walk reports it escaped, nothing shows it.
- A symlink counts only when its resolved target lies inside the folder, compared by
  whole components (`notes_private` is outside `notes`). Symlinked folders are never
  walked into: inside, they would show notes twice; outside, they are out of scope.
- The walk never raises (what it cannot list is reported) and keeps its own stack, so no
  nesting depth reaches Python's recursion limit.
"""

from __future__ import annotations

import errno
import os
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

VIRTUAL_NAME = "homelab"
VIRTUAL_ROOT = f"/{VIRTUAL_NAME}/"

LEADS_OUT = "symlink that leads out of the notes folder"
SYMLINK_LOOP = "symlink loop"
UNFOLLOWABLE = "symlink that cannot be followed"
NAME_NOT_UTF8 = "name is not valid UTF-8"
NAME_NOT_PLAIN = "name holds a control or bidirectional character"
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""The characters that reorder text around them (embeddings, overrides, isolates, marks)."""
FOLDER_UNREADABLE = "folder could not be read"

_NOT_FOUND = (errno.ENOENT, errno.ENOTDIR)


@dataclass(frozen=True)
class WalkEntry:
    """One thing `walk_notes` found: a note to read (`skip` is None) or what it left out, and why.

    `rel` is the path relative to the folder with `/` separators, ending in `/` for a folder;
    it is always valid text (see `shown`). `path` is the real path, symlinks not followed.
    """

    rel: str
    path: Path
    skip: str | None = None

    @property
    def virtual(self) -> str:
        """The path as the model and the UI see it, under /homelab/."""
        return VIRTUAL_ROOT + self.rel


@dataclass(frozen=True)
class FolderEntry:
    """One visible entry of a folder: its name and whether it is a folder (symlinks followed)."""

    name: str
    is_folder: bool


def virtual_path(parts: tuple[str, ...], *, folder: bool = False) -> str:
    """The virtual spelling of a path given as its components below the folder."""
    joined = "/".join(parts)
    if not joined:
        return VIRTUAL_ROOT
    return VIRTUAL_ROOT + joined + ("/" if folder else "")


def is_text(name: str) -> bool:
    """Whether a name is valid UTF-8 text (Python keeps a name's non-UTF-8 bytes as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_plain(text: str) -> bool:
    """Whether `text` holds no control character and no bidirectional control."""
    return not any(_is_unsafe(char) for char in text)


def _is_unsafe(char: str) -> bool:
    return unicodedata.category(char) == "Cc" or char in BIDI_CONTROLS


def is_visible(name: str) -> bool:
    """Whether a file or folder name may be shown: not hidden, valid UTF-8 and plain."""
    return not name.startswith(".") and is_text(name) and is_plain(name)


def shown(name: str) -> str:
    """A name as one line of valid text: bytes that are not UTF-8 as `\\x` escapes
    (b"caf\\xe9" reads `caf\\xe9`), control and bidi characters as `\\u` escapes."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name produces
        text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    else:
        text = raw.decode("utf-8", "backslashreplace")
    return escaped(text)


def escaped(text: str, keep: str = "") -> str:
    """`text` with its control and bidi characters (but those in `keep`) as `\\u` escapes."""
    return "".join(f"\\u{ord(c):04x}" if _is_unsafe(c) and c not in keep else c for c in text)


def real_root(folder: Path) -> Path:
    """The notes folder with symlinks resolved; as given (made absolute) if that fails."""
    real = _resolve(Path(folder))
    return real if isinstance(real, Path) else Path(folder).absolute()


def resolve_inside(root: Path, path: Path) -> Path | str:
    """`path` with every symlink followed, if that stays inside `root` (already resolved).

    Otherwise the reason it does not: `LEADS_OUT`, `SYMLINK_LOOP` or `UNFOLLOWABLE`.
    A path that does not exist (a dangling symlink) resolves as far as it can and is
    judged by where that points; opening it then fails as "not found".
    """
    real = _resolve(path)
    if isinstance(real, str):
        return real
    return real if real.is_relative_to(root) else LEADS_OUT


def _resolve(path: Path) -> Path | str:
    """`path` made absolute with every symlink followed, or SYMLINK_LOOP or UNFOLLOWABLE."""
    try:
        return path.resolve(strict=True)
    except RuntimeError:  # Python before 3.13 reports a loop this way
        return SYMLINK_LOOP
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return SYMLINK_LOOP
        if exc.errno not in _NOT_FOUND:
            return UNFOLLOWABLE
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return UNFOLLOWABLE


def walk_notes(root: Path) -> Iterator[WalkEntry]:
    """Every note under `root` (already resolved) and every entry left out with a reason.

    Hidden names and files not ending in `.md` are left out without a word.
    """
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            yield WalkEntry(prefix, folder, FOLDER_UNREADABLE)
            continue
        folders: list[WalkEntry] = []
        files: list[WalkEntry] = []
        for entry in entries:
            found = _classify(root, prefix, entry)
            if found is not None:
                (folders if found.rel.endswith("/") else files).append(found)
        subfolders = [f for f in folders if f.skip is None]
        yield from (f for f in folders if f.skip is not None)
        yield from files
        stack.extend((f.path, f.rel) for f in reversed(subfolders))


def _classify(root: Path, prefix: str, entry: os.DirEntry[str]) -> WalkEntry | None:
    """The walk's verdict on one entry: a note, a folder to enter, a report, or None (ignore).

    Folders come back with a `rel` ending in `/`; a symlinked folder that stays inside
    is ignored, so the walk never enters it.
    """
    name = entry.name
    if name.startswith("."):
        return None
    is_folder = _is_folder(entry)
    if not is_folder and not name.lower().endswith(".md"):
        return None
    rel = prefix + shown(name) + ("/" if is_folder else "")
    path = Path(entry.path)
    if not is_text(name):
        return WalkEntry(rel, path, NAME_NOT_UTF8)
    if not is_plain(name):
        return WalkEntry(rel, path, NAME_NOT_PLAIN)
    if _is_symlink(entry):
        real = resolve_inside(root, path)
        if isinstance(real, str):
            return WalkEntry(rel, path, real)
        if is_folder:
            return None
    return WalkEntry(rel, path)


def list_folder(root: Path, folder: Path) -> list[FolderEntry]:
    """The visible entries of `folder`, in no particular order; OSError if it cannot be listed.

    Names that are not visible and symlinks that lead out of `root` or cannot be followed
    are left out. A dangling symlink inside is a file (reading it says it is not there).
    """
    found: list[FolderEntry] = []
    with os.scandir(folder) as listing:
        for entry in listing:
            if not is_visible(entry.name):
                continue
            if _is_symlink(entry) and isinstance(resolve_inside(root, Path(entry.path)), str):
                continue
            found.append(FolderEntry(entry.name, _is_folder(entry)))
    return found


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a symlink loop, or a stat that failed
        return False


def _is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False
