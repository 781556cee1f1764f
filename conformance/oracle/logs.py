"""What a log says about a turn: the lines written after its question, read again until what
a clause looks for is there (G10: the app's per-turn line, or the guard proxy's lines).

Deliberate choices:
- Only lines written after the turn's question count: a play notes the log's size before it
  asks (`log_size`), and every read starts there.
- A log is read again every POLL_S until what is looked for is there or the time is up: an
  app may write a turn's line just after the page shows the answer, and the guard proxy
  writes a streamed request's line when its stream has ended.
- A log that does not exist yet reads as empty (an app may create it on its first turn).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

POLL_S = 0.05
"""How often a log is read again while what a clause looks for has not been written."""
T = TypeVar("T")


def log_size(log: Path | None) -> int:
    """The log's size now (0 while it does not exist): where a turn's lines will start."""
    return log.stat().st_size if log is not None and log.exists() else 0


def lines_after(log: Path, offset: int) -> str:
    """The log's text written after its first `offset` bytes ("" while it does not exist)."""
    try:
        with log.open("rb") as file:
            file.seek(offset)
            return file.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def wait_for(look: Callable[[], T], ready: Callable[[T], bool], within_s: float) -> T:
    """`look()` once `ready` says it has what it needs, or as it stands when `within_s` has
    passed; looked at again every POLL_S."""
    deadline = time.monotonic() + within_s
    while True:
        found = look()
        if ready(found) or time.monotonic() >= deadline:
            return found
        time.sleep(POLL_S)


def last_match(text: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """The last line of `text` that `pattern` finds something in, as its match."""
    found = [m for line in text.splitlines() if (m := pattern.search(line))]
    return found[-1] if found else None


def logged_line(
    log: Path, offset: int, pattern: re.Pattern[str], within_s: float
) -> re.Match[str] | None:
    """The turn's log line among those written after `offset`, waiting for it: an app may
    write it just after the page showed the answer. None if none shows within `within_s`."""
    return wait_for(
        lambda: last_match(lines_after(log, offset), pattern),
        lambda found: found is not None,
        within_s,
    )
