"""Child processes a test starts (`python -m app`, `python -m mock_llm`): env and output.

A child gets a minimal environment, so no SG_ setting of the developer's leaks into it,
plus coverage's own variables, so that `patch = subprocess` measures the child too. Its
startup lines are read under the shared deadline, so a child that hangs before printing
fails the test instead of stalling the run.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from pathlib import Path

from .deadlines import DEADLINE_S


def child_env(home: Path, **extra: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")}
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), **inherited, **extra}


def first_lines(process: subprocess.Popen[str], count: int) -> list[str]:
    """The first `count` lines the child writes to stdout, waiting at most DEADLINE_S."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for _ in range(count):
            lines.put(stdout.readline())

    threading.Thread(target=read, daemon=True).start()
    try:
        return [lines.get(timeout=DEADLINE_S) for _ in range(count)]
    except queue.Empty:
        raise AssertionError(f"the child printed no startup line within {DEADLINE_S:g} s") from None
