"""The kit's imports: it knows only the mock's client, the JSON vocabulary every package reads
untrusted JSON with (guardrail/json_shapes.py) and the reference stack, in no cycle, and its
rooms (sub-packages) stand on each other in layers.

Read from the source (every import statement, those under TYPE_CHECKING and inside
functions included), so a type-only cycle counts as much as one that runs.

The rooms, each importing only the rooms before it:

    profiles  <-  browser  <-  oracle  <-  run  <-  report  <-  plugin, init

a profile is data; the browser drives the page a profile describes; the oracle judges what
the page, the mock and the logs say; the run proves the target ready and plays the flows;
the report writes what a run found; the plugin and `python -m conformance init` stand on
all of it. The kit's top-level modules (the clause tests, `python -m conformance`) may
import any room.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[3] / "conformance"
PROJECT = ("conformance", "frontend", "guard", "guardrail", "mock_llm", "scaffold_guard",
           "servekit")  # fmt: skip
REFERENCE = "conformance.run.reference"
"""The one module that starts the reference stack (the mock's server and the app)."""
ROOMS = {
    "profiles": frozenset(),
    "browser": frozenset({"profiles"}),
    "oracle": frozenset({"profiles", "browser"}),
    "run": frozenset({"profiles", "browser", "oracle"}),
    "report": frozenset({"profiles", "browser", "oracle"}),
    "plugin": frozenset({"profiles", "browser", "oracle", "run", "report"}),
    "init": frozenset({"profiles", "browser", "oracle", "run"}),
}
"""Which of the kit's other rooms each room may import."""


def imports(module: Path) -> set[str]:
    """Every module `module` imports, by its full dotted name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def dotted(path: Path) -> str:
    """A kit file's module name (a package by its own name, not `__init__`)."""
    parts = path.relative_to(KIT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def kit_modules() -> dict[str, set[str]]:
    return {dotted(path): imports(path) for path in sorted(KIT.rglob("*.py"))}


def room_of(module: str) -> str | None:
    """The room a kit module is in (None: a top-level module of the kit)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ROOMS) else None


def test_the_kit_is_read_with_its_rooms():
    modules = kit_modules()
    assert {room_of(name) for name in modules} == {*ROOMS, None}
    assert REFERENCE in modules


@pytest.mark.parametrize("name", sorted(kit_modules()))
def test_the_kit_imports_only_the_mocks_client_and_the_json_vocabulary_outside_the_reference_stack(
    name: str,
):
    project = {m for m in kit_modules()[name] if m.split(".")[0] in PROJECT}
    others = {m for m in project if not m.startswith("conformance")}
    allowed = {"mock_llm.client", "guardrail.json_shapes"}
    if name == REFERENCE:
        others = {m for m in others if m.split(".")[0] != "mock_llm"}
        others = {m for m in others if not m.startswith("scaffold_guard.app.")}
    assert others <= allowed, f"{name} imports {sorted(others - allowed)}"


@pytest.mark.parametrize("name", sorted(n for n in kit_modules() if room_of(n) is not None))
def test_a_room_imports_only_the_rooms_before_it(name: str):
    room = room_of(name)
    assert room is not None
    imported = {room_of(m) for m in kit_modules()[name] if m.startswith("conformance.")}
    wrong = sorted(str(other) for other in imported - {room} - ROOMS[room])
    assert wrong == [], f"{name} imports the rooms {wrong} (None: a top-level module)"


def test_the_kits_modules_import_each_other_in_no_cycle():
    modules = kit_modules()
    graph = {
        name: {m for m in found if m in modules and m != name} for name, found in modules.items()
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


def test_the_readers_see_a_modules_room_and_every_kind_of_import(tmp_path: Path):
    """A control: the room of a module, of a room itself and of a top-level module, and a
    type-only and a function-level import."""
    assert room_of("conformance.browser.chat") == "browser"
    assert room_of("conformance.browser") == "browser"
    assert room_of("conformance.test_contract") is None
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from conformance.oracle.played import Play\n"
        "def f():\n    import conformance.run.plays\n",
        encoding="utf-8",
    )
    assert imports(probe) == {"typing", "conformance.oracle.played", "conformance.run.plays"}
