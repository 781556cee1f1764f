"""scaffold_guard.app.data_dir: the data folder checked at start, each failure said in words."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from scaffold_guard.app.data_dir import PROBE_BYTES, DataDirError, check_data_dir, problem


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (errno.EROFS, "is read-only or not writable"),
        (errno.EACCES, "is read-only or not writable"),
        (errno.EPERM, "is read-only or not writable"),
        (errno.ENOSPC, "is full"),
        (errno.EDQUOT, "is full"),
        (errno.ENOTDIR, "is not a folder"),
        (errno.EIO, "cannot write into"),
    ],
)
def test_each_os_error_is_said_with_what_to_change(code: int, said: str):
    message = problem(Path("/data"), OSError(code, os.strerror(code)))
    assert said in message
    assert "SG_DATA_DIR" in message
    assert os.strerror(code) in message


def test_a_usable_folder_is_created_and_left_without_the_probe(tmp_path: Path):
    data = tmp_path / "a" / "data"
    check_data_dir(data, data / "chat.log")
    assert [p.name for p in data.iterdir()] == ["chat.log"]


def test_a_full_disk_is_said_and_the_probe_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def full(descriptor: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(DataDirError, match=re.escape(f"the data folder {tmp_path} is full")):
        check_data_dir(tmp_path, tmp_path / "chat.log")
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_folder_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def read_only(*args: object) -> int:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(DataDirError, match="is read-only or not writable"):
        check_data_dir(tmp_path, tmp_path / "chat.log")


def test_a_short_write_is_carried_on_until_the_probe_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    written: list[int] = []
    real_write = os.write

    def short(descriptor: int, data: bytes) -> int:
        done = real_write(descriptor, bytes(data[:1000]))
        written.append(done)
        return done

    monkeypatch.setattr(os, "write", short)
    check_data_dir(tmp_path, tmp_path / "chat.log")
    assert sum(written) == PROBE_BYTES


def test_a_log_file_in_a_folder_that_is_a_file_is_said_with_its_setting(tmp_path: Path):
    (tmp_path / "logs").write_text("a file", encoding="utf-8")
    with pytest.raises(DataDirError, match=r"the log file .* is not a folder .*SG_LOG_FILE"):
        check_data_dir(tmp_path / "data", tmp_path / "logs" / "chat.log")
