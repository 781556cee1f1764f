"""Test files: write them (text or bytes, folders created) and make them unreadable.

Tests run as root, where chmod 000 hides nothing, so an unreadable file or folder is made
by refusing its open or scandir the way the kernel would (PermissionError 13).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

NOT_UTF8 = os.fsdecode(b"caf\xe9")  # a Latin-1 name; Python keeps the byte as a lone surrogate


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def refuse_open_of(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make Path.open fail for files called `name`, as for one without read permission."""
    open_path = Path.open

    def refusing(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == name:
            raise PermissionError(13, "Permission denied", str(self))
        return open_path(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing)


def refuse_scandir_of(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make os.scandir fail for folders called `name`, as for one without read permission."""
    scandir = os.scandir

    def refusing(path: Any) -> Any:
        if Path(path).name == name:
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
