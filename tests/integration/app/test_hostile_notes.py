"""The app starts and answers on a notes folder with a symlink loop, a link out, bad names, a
50 MB note, a FIFO, a socket and a folder named like notes (issue 12)."""

from __future__ import annotations

import os
import socket
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ...support.deadlines import DEADLINE_S
from ...support.servers import app_settings, serve_app
from ...support.sse import ask


def hostile_notes(root: Path) -> Path:
    notes = root / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "backups.md").write_text("# Backups\n\nBackups run nightly at 02:00.\n")
    (notes / "loop").symlink_to(notes / "loop")  # a link to itself
    (notes / "sub" / "up").symlink_to(notes)  # a folder link back up
    (notes / "out.md").symlink_to("/etc/passwd")
    (notes / "binary.md").write_bytes(b"\x00\xff\xfe binary")
    fd = os.open(bytes(notes) + b"/caf\xe9.md", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"# Cafe\n\nLatin-1 name.\n")
    os.close(fd)
    with (notes / "huge.md").open("wb") as huge:  # 50 MB, sparse: no disk spent
        huge.write(b"# Huge\n\nBackups run hourly.\n")
        huge.truncate(50 << 20)
    os.mkfifo(notes / "pipe.md")  # opening it would wait for a writer forever
    (notes / "folder.md").mkdir()
    return notes


@contextmanager
def listening_socket(path: Path) -> Generator[None]:
    """A Unix socket at `path`: a file no one can open, root included."""
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        yield


async def test_the_app_starts_and_answers_on_a_hostile_notes_folder(
    mock_url: str, tmp_path: Path, key: str
):
    notes = hostile_notes(tmp_path)
    settings = app_settings(mock_url, tmp_path / "data", SG_NOTES_DIR=str(notes))

    with listening_socket(notes / "socket.md"), serve_app(settings) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            turn = await ask(client, f"When do backups run? [[mock:tool-then-answer#{key}]]")

    assert turn.frames[0]["mode"] == "grounded"
    assert turn.last["type"] == "done"
    assert "/homelab/backups.md" in turn.last["sources"]
    assert "root:" not in turn.text
