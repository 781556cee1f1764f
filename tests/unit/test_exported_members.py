"""The public surface of mock_llm is exactly what `__all__` lists."""

from __future__ import annotations

import mock_llm


def test_all_lists_the_public_names_sorted():
    public = sorted(
        name
        for name in vars(mock_llm)
        if not name.startswith("_") and not isinstance(getattr(mock_llm, name), type(mock_llm))
    )
    assert mock_llm.__all__ == public
