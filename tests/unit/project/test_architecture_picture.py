"""docs/architecture.md draws what the code does.

- The picture of the packages (the fenced block after `<!-- import-picture -->`) has one
  line per package, `name ──► other, other` or `name ──► (none)`, and its edges are exactly
  the imports between our top-level packages, read from every import statement of every
  file (function-level and `TYPE_CHECKING` ones included). A new dependency must be drawn,
  and a dependency that is gone must be erased.
- The mock's internal diagram, and the kit's section (its table and diagram), name only
  modules that exist.
"""

from __future__ import annotations

import functools
import re
from fnmatch import fnmatch

import pytest

from .test_dependency_rule import OURS, ROOT, files, imported_packages

DOC = ROOT / "docs" / "architecture.md"
MARK = "<!-- import-picture -->"
EDGE = re.compile(r"^([\w.]+) +──► +(.+?)\s*$")
"""A line of the picture: a package at the start of the line, its arrow, its imports. Lines
that start with a space are notes for the reader."""


def picture(text: str) -> str:
    """The fenced block right after the marker."""
    after = text.split(MARK, 1)[1].lstrip("\n")
    assert after.startswith("```"), f"{MARK} must be followed by a fenced block"
    return after.split("\n", 1)[1].split("\n```", 1)[0]


def drawn_edges(block: str) -> dict[str, frozenset[str]]:
    edges: dict[str, frozenset[str]] = {}
    for line in block.splitlines():
        match = EDGE.match(line)
        if match is None:
            assert not line[:1].isalnum(), f"not a picture line: {line!r}"
            continue
        package, targets = match.groups()
        assert package not in edges, f"{package} is drawn twice"
        edges[package] = frozenset() if targets == "(none)" else frozenset(targets.split(", "))
    return edges


@functools.cache
def actual_edges() -> dict[str, frozenset[str]]:
    return {
        package: frozenset(
            name for path in files(package) for name in imported_packages(path, package)
        )
        for package in OURS
    }


def test_the_picture_draws_every_package_once():
    assert set(drawn_edges(picture(DOC.read_text(encoding="utf-8")))) == OURS


@pytest.mark.parametrize("package", sorted(OURS))
def test_the_pictures_edges_are_the_imports_in_the_code(package: str):
    drawn = drawn_edges(picture(DOC.read_text(encoding="utf-8")))
    imported = sorted(actual_edges()[package])
    assert sorted(drawn.get(package, ())) == imported, f"the code: {package} ──► {imported}"


def test_the_picture_reader_reads_edges_and_skips_notes():
    block = "app          ──► mock_llm, servekit\n                 (a note)\nguardrail ──► (none)\n"
    assert drawn_edges(block) == {
        "app": frozenset({"mock_llm", "servekit"}),
        "guardrail": frozenset(),
    }


def mock_diagram() -> str:
    """The first diagram (a fenced block without a language) of the `## mock_llm` section."""
    section = DOC.read_text(encoding="utf-8").split("\n## mock_llm\n", 1)[1].split("\n## ", 1)[0]
    return section.split("\n```\n", 1)[1].split("\n```", 1)[0]


def test_the_mock_diagram_names_only_modules_that_exist():
    names = set(re.findall(r"[\w*]+(?:/[\w*]+)*\.(?:py|yaml)", mock_diagram()))
    assert len(names) > 20  # the diagram was found
    present = [p.relative_to(ROOT / "mock_llm").as_posix() for p in (ROOT / "mock_llm").rglob("*")]
    missing = {
        name
        for name in names
        if not any(fnmatch(f, name) or fnmatch(f, "*/" + name) for f in present)
    }
    assert missing == set()


def kit_section() -> str:
    """The `## The conformance kit` section: its table of modules and its diagram."""
    text = DOC.read_text(encoding="utf-8")
    return text.split("\n## The conformance kit\n", 1)[1].split("\n## ", 1)[0]


def test_the_kit_section_names_only_modules_that_exist():
    kit = ROOT / "conformance"
    names = {
        name
        for name in re.findall(r"[\w*]+(?:/[\w*]+)*\.(?:py|js|toml)", kit_section())
        if not name.startswith("tests/")
    }
    assert len(names) > 40  # the section was found
    present = [p.relative_to(kit).as_posix() for p in kit.rglob("*") if p.is_file()]
    missing = {
        name
        for name in names
        if not any(fnmatch(f, name) or fnmatch(f, "*/" + name) for f in present)
    }
    assert missing == set()
