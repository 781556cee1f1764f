"""The shapes of the app's chat log lines, for tests that read the log (tests/e2e and
tests/integration): any line of it, and one turn's line (format it with `turn=`); and the
guard proxy's per-request counts as a test's captured log has them (`stripped_in_log`)."""

from __future__ import annotations

import re

import pytest

LOG_LINE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:INFO|WARNING|ERROR)"
    r" (?:chat turn=[0-9a-f]+ |agent: ).*"
)
TURN_LINE = (
    r"\S+ \S+ INFO chat turn={turn} mode=(?:grounded|deflected|none) rounds=\d+ tools=\d+"
    r" thinking_chars=\d+ content_chars=\d+ total_ms=\d+ retries=\d+ scaffold_stripped=\d+"
)


def stripped_in_log(caplog: pytest.LogCaptureFixture, route: str) -> list[int]:
    """The `scaffold_stripped=` count of each of the guard proxy's `guard: ROUTE` lines."""
    found = re.findall(rf"guard: {route} .* scaffold_stripped=(\d+)", caplog.text)
    return [int(n) for n in found]
