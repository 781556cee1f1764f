"""The dependency rule between the packages, read from every import statement of every file
(function-level and `TYPE_CHECKING` imports included):

    guardrail  <-  servekit  <-  mock_llm, scaffold_guard.app, guard

- guardrail, the contract, imports nothing of ours;
- servekit, what every server shares, imports guardrail at most;
- guard imports nothing of the mock, the app or the kit;
- app imports the mock only to embed the demo (`DEMO_WIRING`), and no guard or kit;
- mock_llm imports nothing of the app, the guard or the kit;
- the mock and the kit, the guard's oracle, import of guardrail only its JSON-shape helpers.

Inside mock_llm, its sub-packages are layers (`MOCK_LAYERS`): flows <- wire <- play <-
server <- record, the journal beside them, and the client, which the kit imports, reads only
the flow model and the journal.

(The conformance kit's own rule is pinned with the kit.)
"""

from __future__ import annotations

import ast
from pathlib import Path

from ...support.cases import check_each

ROOT = Path(__file__).resolve().parents[3]
OURS = frozenset(
    {
        "conformance",
        "guard",
        "guardrail",
        "mock_llm",
        "scaffold_guard",
        "scaffold_guard.app",
        "scaffold_guard.integrations",
        "servekit",
    }
)
"""Our packages as the rule sees them: the top-level ones, and the two that ship inside
`scaffold_guard` (the notes app and the integrations), each its own (the checkout's `app/`
is `python -m app`'s alias for scaffold_guard.app, not a package of its own)."""
DEMO_WIRING = frozenset({"scaffold_guard/app/cli.py"})
"""The app's modules that may import mock_llm: the embedded demo starts the mock."""

ALLOWED = {
    "guardrail": frozenset(),
    "servekit": frozenset({"guardrail"}),
    "guard": frozenset({"guardrail", "servekit"}),
    "scaffold_guard.app": frozenset({"guardrail", "servekit"}),
    "mock_llm": frozenset({"guardrail", "servekit"}),
}
"""Which of our other packages each package may import."""


def package_of(module: str) -> str | None:
    """The package of ours that the dotted `module` belongs to (the most specific), if any."""
    for package in sorted(OURS, key=len, reverse=True):
        if module == package or module.startswith(package + "."):
            return package
    return None


def imported_packages(path: Path, package: str) -> set[str]:
    """Our other packages that `package`'s file `path` imports (a relative import is of its
    own package)."""
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(package_of(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(package if node.level else package_of(node.module or ""))
    return {name for name in found if name is not None} - {package}


def files(package: str) -> list[Path]:
    """The files of `package` (dotted: a package of ours or a sub-package of one), without
    those of another package of ours inside it."""
    mine = package_of(package)
    return sorted(
        path
        for path in ROOT.joinpath(*package.split(".")).rglob("*.py")
        if package_of(".".join(path.relative_to(ROOT).with_suffix("").parts)) == mine
    )


def named(paths: list[Path]) -> list[tuple[str, Path]]:
    """Each file with its path in the checkout as its name (a failure names the file)."""
    return [(str(path.relative_to(ROOT)), path) for path in paths]


def test_each_package_imports_only_what_the_rule_allows():
    def within_the_rule(path: Path) -> None:
        name = str(path.relative_to(ROOT))
        package = package_of(".".join(path.relative_to(ROOT).with_suffix("").parts)) or ""
        allowed = ALLOWED[package] | ({"mock_llm"} if name in DEMO_WIRING else set())
        assert imported_packages(path, package) - allowed == set()

    paths = [path for package in sorted(ALLOWED) for path in files(package)]
    assert check_each(named(paths), within_the_rule) == len(paths) > 0


def test_the_demo_wiring_is_where_the_app_embeds_the_mock():
    assert all(
        "mock_llm" in imported_packages(ROOT / name, "scaffold_guard.app") for name in DEMO_WIRING
    )


def test_the_reader_sees_every_kind_of_import(tmp_path: Path):
    """A control: plain, dotted, `TYPE_CHECKING`, function-level and relative imports."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import guard.http.server\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from conformance import plugin\n"
        "def f():\n    from mock_llm.client import MockClient\n"
        "from . import turn\n"
        "import servekit as kit, json\n"
        "from scaffold_guard.integrations import litellm_guardrail\n",
        encoding="utf-8",
    )
    assert imported_packages(probe, "scaffold_guard.app") == {
        "guard",
        "conformance",
        "mock_llm",
        "servekit",
        "scaffold_guard.integrations",
    }


MOCK_LAYERS = {
    "flows": frozenset(),
    "wire": frozenset({"flows"}),
    "journal": frozenset(),
    "play": frozenset({"flows", "wire"}),
    "server": frozenset({"flows", "wire", "play", "journal"}),
    "record": frozenset({"flows", "wire", "server"}),
}
"""Which of mock_llm's other sub-packages each one may import: the flow model and the wire
formats know nothing of playing, serving or recording; the journal stands alone."""


def absolute_imports(path: Path) -> set[str]:
    """The modules `path` imports by their absolute names (`from X import y` counts as X)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
    return found


def mock_subpackages(path: Path) -> set[str]:
    """The sub-packages of mock_llm that `path` imports (`mock_llm.X...` or `mock_llm`
    itself, named "")."""
    parts = [name.split(".") for name in absolute_imports(path)]
    return {p[1] if len(p) > 1 else "" for p in parts if p[0] == "mock_llm"}


ORACLE_MAY_USE = frozenset({"guardrail.json_shapes"})
"""What the mock and the kit, the guard's oracle, may import of guardrail: the JSON-shape
vocabulary, never the filter or the family table (a gap there would hide in both)."""


def test_the_mock_and_the_kit_import_nothing_of_the_guards_filter_or_family_table():
    def oracle_apart(path: Path) -> None:
        used = {name for name in absolute_imports(path) if name.split(".")[0] == "guardrail"}
        assert used - ORACLE_MAY_USE == set()

    paths = files("mock_llm") + files("conformance")
    assert check_each(named(paths), oracle_apart) == len(paths) > 0


def test_each_mock_sub_package_imports_only_the_layers_below_it():
    def below_it(path: Path) -> None:
        layer = path.parent.name
        assert mock_subpackages(path) - {layer} - MOCK_LAYERS[layer] == set()

    paths = [path for layer in sorted(MOCK_LAYERS) for path in files(f"mock_llm.{layer}")]
    assert check_each(named(paths), below_it) == len(paths) > 0


def test_the_mock_client_imports_only_the_flow_model_and_the_journal():
    assert mock_subpackages(ROOT / "mock_llm" / "client.py") <= {"flows", "journal"}


def test_the_layer_reader_sees_dotted_and_bare_imports(tmp_path: Path):
    """A control: a dotted import, the package itself, and a `from` import of a module."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import mock_llm.server.app\nfrom mock_llm import Flow\nfrom mock_llm.play import turns\n",
        encoding="utf-8",
    )
    assert mock_subpackages(probe) == {"server", "", "play"}
