"""The shapes of the app's chat log lines, for tests that read the log (tests/e2e and
tests/integration): any line of it, and one turn's line (format it with `turn=`)."""

from __future__ import annotations

import re

LOG_LINE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:INFO|WARNING|ERROR)"
    r" (?:chat turn=[0-9a-f]+ |agent: ).*"
)
TURN_LINE = (
    r"\S+ \S+ INFO chat turn={turn} mode=(?:grounded|deflected|none) rounds=\d+ tools=\d+"
    r" thinking_chars=\d+ content_chars=\d+ total_ms=\d+ retries=\d+ scaffold_stripped=\d+"
)
