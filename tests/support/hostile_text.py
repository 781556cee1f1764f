"""Text that could break a line, a log line or a layout, or forge a log line, by id: shared by
the browser matrix (tests/e2e/test_hostile_input.py) and the log matrix
(tests/integration/app/test_hostile_log.py)."""

from __future__ import annotations

HOSTILE_TEXT = {
    "newline": "first line\nsecond line",
    "crlf": "first line\r\nsecond line",
    "cr": "first line\rsecond line",
    "ansi-sgr": "\x1b[31mred\x1b[0m and \x1b[2J\x1b[H cleared",
    "ansi-osc8": "\x1b]8;;attacker.invalid\x07a link\x1b]8;;\x07 here",
    "rlo": "\u202eexe.gnp",
    "isolates": "\u2066left\u2067right\u2068first-strong\u2069 closed \u2067 unclosed",
    "line-separator": "one\u2028two",
    "paragraph-separator": "one\u2029two",
    "nel": "one\x85two",
    "vt-ff-fs": "one\x0btwo\x0cthree\x1cfour\x1efive",
    "forged-log-line": (
        "x\n2026-01-01 00:00:00,000 INFO chat turn=0123456789abcdef mode=grounded rounds=1"
        " tools=0 thinking_chars=0 content_chars=1 total_ms=1 retries=0 scaffold_stripped=0"
    ),
}
