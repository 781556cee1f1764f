from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.flows.chunking import TimedFrames, split, step_parts
from mock_llm.flows.model import Chunking, RecordedChunk, Step, ToolCall

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


# --- step_parts: a step part by part, for the block formats -----------------------------


def part_text(step: Step) -> list[tuple[str, int | None, str]]:
    return [
        (p.kind, p.call, (p.opening or "") + "".join(piece for _, piece in p.deltas))
        for p in step_parts(step)
    ]


@given(
    content=st.text(max_size=30),
    reasoning=st.text(max_size=30),
    arguments=st.lists(st.text(max_size=20), max_size=2),
    chunking=st.sampled_from(MODES),
)
def test_a_steps_parts_join_back_to_its_texts_in_streaming_order(
    content: str, reasoning: str, arguments: list[str], chunking: Chunking
):
    calls = tuple(ToolCall("read", text) for text in arguments)
    step = Step(content=content, reasoning=reasoning, tool_calls=calls, chunking=chunking)
    expected = [("reasoning", None, reasoning)] if reasoning else []
    if content or not calls:
        expected.append(("content", None, content))
    expected += [("call", index, text) for index, text in enumerate(arguments)]
    assert part_text(step) == expected


def test_an_authored_steps_first_chunk_waits_nothing_and_every_other_waits_delay_ms():
    step = Step(content="a b", reasoning="x", tool_calls=(ToolCall("read", "{}"),), delay_ms=20)
    parts = step_parts(step)
    assert [(p.opening_pause, [pause for pause, _ in p.deltas]) for p in parts] == [
        (0.0, [0.0]),
        (0.02, [0.0, 0.02]),
        (0.02, [0.0]),
    ]


def test_a_recorded_calls_first_piece_is_its_opening_after_its_gap():
    recorded = (
        RecordedChunk("content", "Hi", after_ms=100),
        RecordedChunk("call", "", call=0, after_ms=5),
        RecordedChunk("call", '{"a": 1}', call=0, after_ms=7),
    )
    step = Step(content="Hi", tool_calls=(ToolCall("read", '{"a": 1}'),), recorded=recorded)
    text, call = step_parts(step)
    assert (text.opening_pause, text.opening, text.deltas) == (0.1, None, ((0.0, "Hi"),))
    assert (call.opening_pause, call.opening, call.deltas) == (0.005, "", ((0.007, '{"a": 1}'),))


def test_timed_frames_put_a_pending_pause_before_the_next_frame_only():
    frames = TimedFrames()
    frames.add(b"a")
    frames.pending = 0.5
    frames.add(b"b", 0.25)
    frames.add(b"c")
    assert frames.frames == [(0.0, b"a"), (0.75, b"b"), (0.0, b"c")]
