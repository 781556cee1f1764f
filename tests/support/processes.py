"""Child processes a test starts (`python -m app`, `python -m mock_llm`, `python -m guard`):
env and output.

A child gets a minimal environment, so no SG_ setting of the developer's leaks into it,
plus coverage's own variables, so that `patch = subprocess` measures the child too. Its
startup lines are read under the shared deadline, so a child that hangs before printing
fails the test instead of stalling the run.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from .deadlines import DEADLINE_S

UNUSED_DEV_PLUGINS = ("langsmith_plugin", "hypothesispytest", "anyio", "pytest_cov")
"""pytest plugins of the dev environment that a kit run started by a test never uses (a user's
kit install has none of them). Loading them is most of a short run's start (0.46 against
1.50 CPU-s for a run that stops at a usage error), and an in-process pytester run imports
them again each time (it restores sys.modules after every inner run)."""


def plugins_off(*also: str) -> list[str]:
    """pytest arguments that leave UNUSED_DEV_PLUGINS, and the plugins `also`, unloaded."""
    return [arg for name in (*UNUSED_DEV_PLUGINS, *also) for arg in ("-p", f"no:{name}")]


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


@dataclass
class ChildProcess:
    """A `python -m ...` child: its first stdout line, and its stderr once it has stopped."""

    process: subprocess.Popen[str]
    line: str = ""
    stderr: str = ""


@contextmanager
def python_child(home: Path, *args: str) -> Generator[ChildProcess]:
    """`python -m ARGS`, its first line read, serving until the block ends (then SIGTERM)."""
    process = subprocess.Popen(
        [sys.executable, "-m", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(home),
    )
    child = ChildProcess(process)
    try:
        [child.line] = first_lines(process, 1)
        yield child
    finally:
        process.terminate()
        _, child.stderr = process.communicate(timeout=DEADLINE_S)


MOCK_STARTUP = re.compile(r"mock_llm: serving \d+ flows on (http://127\.0\.0\.1:\d+) ")


@dataclass(frozen=True)
class MockProcess:
    """A `python -m mock_llm` child: its URL, and its stderr once it has stopped."""

    child: ChildProcess
    url: str

    @property
    def process(self) -> subprocess.Popen[str]:
        return self.child.process

    @property
    def stderr(self) -> str:
        return self.child.stderr


@contextmanager
def mock_process(home: Path, *args: str) -> Generator[MockProcess]:
    """`python -m mock_llm --port 0 ARGS`, serving until the block ends (then terminated)."""
    with python_child(home, "mock_llm", "--port", "0", *args) as child:
        match = MOCK_STARTUP.match(child.line)
        assert match, child.line
        yield MockProcess(child, match.group(1))


def guard_process(home: Path, *args: str) -> AbstractContextManager[ChildProcess]:
    """`python -m guard ARGS --port 0`, serving until the block ends (then terminated)."""
    return python_child(home, "guard", *args, "--port", "0")
