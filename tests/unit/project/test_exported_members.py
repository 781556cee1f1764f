"""The public surface of each library package is exactly what its `__all__` lists.

mock_llm's names load on first use (PEP 562): `dir` lists them, and reading each one here
proves it resolves.
"""

from __future__ import annotations

from types import ModuleType

import pytest

import guardrail
import mock_llm


@pytest.mark.parametrize("package", [mock_llm, guardrail], ids=lambda p: p.__name__)
def test_all_lists_the_public_names_sorted(package: ModuleType):
    public = sorted(
        name
        for name in dir(package)
        if not name.startswith("_") and not isinstance(getattr(package, name), ModuleType)
    )
    assert package.__all__ == public


def test_a_name_mock_llm_does_not_export_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = mock_llm.nothing_here
