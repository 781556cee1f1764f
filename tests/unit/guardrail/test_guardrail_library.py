"""The guardrail library (guardrail/) stands on its own: the app and the proxy adapt it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import guardrail

LIBRARY = Path(guardrail.__file__).parent
OURS = ("app", "mock_llm", "conformance", "guard", "servekit", "tests", "benchmarks")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(LIBRARY.glob("*.py")), ids=lambda p: p.name)
def test_the_library_imports_nothing_of_the_app_the_mock_or_the_proxy(path: Path):
    ours = {name for name in _imported(path) if name.split(".")[0] in OURS}
    assert ours == set()
