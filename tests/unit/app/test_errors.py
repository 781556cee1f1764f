"""scaffold_guard.app.errors.one_line: upstream text made safe to show as one short line."""

from __future__ import annotations

import pytest

from scaffold_guard.app.errors import UPSTREAM_MESSAGE_CHARS, one_line


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("Unknown model 'x'.", "Unknown model 'x'."),
        ("line one\nline two\r\n\tthree", "line one line two three"),
        ("red \x1b[31mALERT\x1b[0m", "red [31mALERT[0m"),
        ("abc\u202edcba\u200b!", "abcdcba!"),
        ("   ", ""),
    ],
    ids=["plain", "newlines-and-tabs", "ansi-escape", "bidi-and-zero-width", "blank"],
)
def test_one_line_drops_control_and_format_characters(raw: str, shown: str):
    assert one_line(raw) == shown


def test_one_line_cuts_long_text_with_an_ellipsis_within_the_limit():
    shown = one_line("word " * 200)
    assert len(shown) == UPSTREAM_MESSAGE_CHARS
    assert shown.endswith("word…")
