"""The public surface of each library package is exactly what its `__all__` lists."""

from __future__ import annotations

from types import ModuleType

import pytest

import guardrail
import mock_llm


@pytest.mark.parametrize("package", [mock_llm, guardrail], ids=lambda p: p.__name__)
def test_all_lists_the_public_names_sorted(package: ModuleType):
    public = sorted(
        name
        for name in vars(package)
        if not name.startswith("_") and not isinstance(getattr(package, name), ModuleType)
    )
    assert package.__all__ == public
