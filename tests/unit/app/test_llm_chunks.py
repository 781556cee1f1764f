"""app.rag.llm.chunks: a stream chunk's parts as the client reads them. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from app.rag.llm.chunks import _reasoning_text


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
