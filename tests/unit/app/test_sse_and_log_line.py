from __future__ import annotations

import json

import pytest

from scaffold_guard.app.api.sse import encode
from scaffold_guard.app.turn_log import TurnStats, format_turn_line


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "line\nbreak",
        "\r\r\n",
        "sep\u2028arated\u2029by\u0085unicode",
        "\n\nevent: done\ndata: {}\n\n",
        "caf\u00e9 \U0001f600",
        "lone \ud800 surrogate",
    ],
    ids=["plain", "newline", "cr", "unicode-breaks", "forged-event", "non-ascii", "surrogate"],
)
def test_a_frame_is_one_data_line_whatever_the_text(text: str):
    frame = encode({"type": "delta", "text": text})
    assert frame.startswith(b"data: ")
    assert frame.endswith(b"\n\n")
    assert frame.decode().splitlines() == [frame.decode()[:-2], ""]  # str.splitlines' too
    assert b"\r" not in frame
    assert json.loads(frame[len(b"data: ") : -2]) == {"type": "delta", "text": text}


def test_turn_line_has_the_fixed_field_order():
    stats = TurnStats("abc", "grounded", 2, 1, 10, 20, 345, 0, 76)
    assert format_turn_line(stats) == (
        "chat turn=abc mode=grounded rounds=2 tools=1 thinking_chars=10 content_chars=20"
        " total_ms=345 retries=0 scaffold_stripped=76"
    )
