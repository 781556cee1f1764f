"""The kit's imports: it knows only the mock's client and the reference stack, in no cycle.

Read from the source (every import statement, those under TYPE_CHECKING and inside
functions included), so a type-only cycle counts as much as one that runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[3] / "conformance"
PROJECT = ("app", "conformance", "frontend", "guard", "guardrail", "integrations", "mock_llm",
           "servekit")  # fmt: skip
REFERENCE = "reference"
"""The one module that starts the reference stack (the mock's server and the app)."""


def imports(module: Path) -> set[str]:
    """Every module `module` imports, by its full dotted name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def kit_modules() -> dict[str, set[str]]:
    return {path.stem: imports(path) for path in sorted(KIT.glob("*.py"))}


@pytest.mark.parametrize("name", sorted(kit_modules()))
def test_the_kit_imports_only_the_mocks_client_outside_the_reference_stack(name: str):
    project = {m for m in kit_modules()[name] if m.split(".")[0] in PROJECT}
    others = {m for m in project if not m.startswith("conformance")}
    allowed = {"mock_llm.client"}
    if name == REFERENCE:
        others = {m for m in others if m.split(".")[0] not in ("app", "mock_llm")}
    assert others <= allowed, f"conformance/{name}.py imports {sorted(others - allowed)}"


def test_the_kits_modules_import_each_other_in_no_cycle():
    graph = {
        name: {m.split(".")[1] for m in found if m.startswith("conformance.")}
        for name, found in kit_modules().items()
    }
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = " -> ".join((*path[path.index(name) :], name))
            pytest.fail(f"an import cycle in conformance/: {cycle}")
        if name in done:
            return
        for imported in sorted(graph.get(name, ())):
            visit(imported, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())
