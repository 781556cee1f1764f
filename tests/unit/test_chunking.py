from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.chunking import split
from mock_llm.flows import Chunking

MODES = [
    Chunking("whole"),
    Chunking("char"),
    Chunking("word"),
    Chunking("size", 1),
    Chunking("size", 7),
]


@pytest.mark.parametrize(
    ("text", "chunking", "expected"),
    [
        ("hello big world", Chunking("whole"), ["hello big world"]),
        ("héllo", Chunking("char"), ["h", "é", "l", "l", "o"]),
        ("hello big  world", Chunking("word"), ["hello", " big", "  world"]),
        ("  lead and tail  ", Chunking("word"), ["  lead", " and", " tail", "  "]),
        ("line\nbreak", Chunking("word"), ["line", "\nbreak"]),
        ("abcdefg", Chunking("size", 3), ["abc", "def", "g"]),
        ("<|tool_call_start|>", Chunking("size", 19), ["<|tool_call_start|>"]),
    ],
)
def test_split_cuts_text_as_the_mode_says(text: str, chunking: Chunking, expected: list[str]):
    assert split(text, chunking) == expected


@pytest.mark.parametrize("chunking", MODES, ids=lambda c: c.describe())
def test_empty_text_gives_no_chunks(chunking: Chunking):
    assert split("", chunking) == []


@given(text=st.text(), chunking=st.sampled_from(MODES))
def test_joined_chunks_are_the_text(text: str, chunking: Chunking):
    chunks = split(text, chunking)
    assert "".join(chunks) == text
    assert all(chunks)


@given(text=st.text(min_size=1), size=st.integers(min_value=1, max_value=50))
def test_size_chunks_are_at_most_size_long(text: str, size: int):
    assert all(len(c) <= size for c in split(text, Chunking("size", size)))
