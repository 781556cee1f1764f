"""Waiting for a third-party server a test started: up when its health URL answers 200.

A process that exits first fails at once with the tail of its log; one that never answers
fails at `deadline_s`, a hang guard for a slow first start, not a timing claim.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

POLL_S = 0.5


def wait_healthy(
    url: str, process: subprocess.Popen[bytes], log: Path, *, deadline_s: float, what: str
) -> None:
    """Return once `url` answers 200; RuntimeError with `log`'s tail when `what` exits or
    stays silent past `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(POLL_S)
    raise RuntimeError(f"{what} did not answer {url} in {deadline_s:g} s:\n{_tail(log)}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 30 s."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-4000:]
