"""scaffold_guard.app.rag.llm.chunks: a stream chunk's parts as the client reads them, and its
bounds. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from scaffold_guard.app.errors import LLMError
from scaffold_guard.app.rag.llm.chunks import MAX_TOOL_CALLS, ChunkAccumulator, _reasoning_text
from scaffold_guard.app.rag.llm.errors import MSG_TOO_LONG


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"reasoning_content": "a"}, "a"),
        ({"reasoning": "b"}, "b"),
        ({"reasoning_content": "same", "reasoning": "same"}, "same"),
        ({"reasoning_content": "one", "reasoning": "two"}, "onetwo"),
        ({"reasoning_content": None, "reasoning": ""}, ""),
        ({"reasoning": {"not": "text"}}, ""),
        ({}, ""),
    ],
)
def test_reasoning_text_reads_either_field_without_duplicating(
    extra: dict[str, Any], expected: str
) -> None:
    assert _reasoning_text(extra) == expected


def delta_chunk(delta: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": delta}]}


def test_a_replys_text_past_max_chars_is_refused_as_too_long() -> None:
    seen = ChunkAccumulator(max_chars=10)
    seen.pieces(delta_chunk({"reasoning_content": "12345", "content": "12345"}))

    with pytest.raises(LLMError) as refused:
        seen.pieces(delta_chunk({"tool_calls": [{"function": {"arguments": "x"}}]}))
    assert (refused.value.message, refused.value.retryable) == (MSG_TOO_LONG, False)
    assert refused.value.reason == "reply over 10 characters"


def test_a_reply_opening_more_than_max_tool_calls_is_refused_as_too_long() -> None:
    seen = ChunkAccumulator()
    calls = [{"index": n} for n in range(MAX_TOOL_CALLS)]
    seen.pieces(delta_chunk({"tool_calls": calls}))

    with pytest.raises(LLMError, match=MSG_TOO_LONG):
        seen.pieces(delta_chunk({"tool_calls": [{"index": MAX_TOOL_CALLS}]}))


def test_choices_other_than_0_are_neither_shown_nor_counted_nor_kept() -> None:
    seen = ChunkAccumulator(max_chars=5)
    chunk = {"choices": [{"index": n, "delta": {"content": "LEAK!!"}} for n in range(1, 10_000)]}

    assert seen.pieces(chunk) == []
    assert (seen.chars, seen.calls, seen.finish_reason) == (0, {}, None)
