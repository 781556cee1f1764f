"""The data folder checked at start: one clear error for a folder the app cannot use.

The app keeps its SQLite databases and its chat log in the data folder (`SG_DATA_DIR`). A
folder that is read-only, full, or not a folder at all would otherwise fail the first
turn, or the start, with a bare sqlite3 or OS error. `check_data_dir` creates the folder,
writes and syncs a small probe file in it, and opens the log for appending; each failure
becomes a `DataDirError` that says which folder, what is wrong, and what to change.

The probe is real bytes synced to disk (not `os.access`): an administrator passes every
permission check on a read-only mount, and only a write finds a full disk.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["PROBE_BYTES", "DataDirError", "check_data_dir", "problem"]

PROBE_BYTES = 64 * 1024
"""What the probe writes: room for the databases' first pages and their write-ahead logs."""
PROBE_NAME = ".scaffold-guard-write-probe"


class DataDirError(Exception):
    """The data folder or the log file cannot be used; the message says why and what to do."""


def problem(where: Path, error: OSError, setting: str = "SG_DATA_DIR") -> str:
    """What is wrong with `where`, from the OS error a write there raised."""
    reason = error.strerror or str(error)
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return (
            f"{where} is read-only or not writable ({reason}): set {setting} to a folder"
            " the app can write, or give it the rights to this one"
        )
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{where} is full ({reason}): free some space, or set {setting} elsewhere"
    if error.errno in (errno.ENOTDIR, errno.EEXIST):
        return f"{where} is not a folder ({reason}): set {setting} to a folder"
    return f"cannot write into {where} ({reason}): check {setting}"


def check_data_dir(data_dir: Path, log_file: Path) -> None:
    """Raise DataDirError unless the app can create, write and sync files in `data_dir`
    and append to `log_file`."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        _probe(data_dir / PROBE_NAME)
    except OSError as error:
        raise DataDirError(f"the data folder {problem(data_dir, error)}") from error
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        raise DataDirError(f"the log file {problem(log_file, error, 'SG_LOG_FILE')}") from error


def _probe(path: Path) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        left = memoryview(b"\0" * PROBE_BYTES)
        while left:
            left = left[os.write(descriptor, left) :]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
        path.unlink(missing_ok=True)
