"""scaffold_guard/integrations/openwebui/build.py: the pasteable file is the library's code, and
current."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import guardrail.policy
import guardrail.registries
from scaffold_guard.integrations.openwebui import build, filter_template

from ...support.deadlines import DEADLINE_S
from ..helpers.openwebui_driver import pasted_module

STALE = f"{build.OUT.name} is stale: run `{build.COMMAND}` and commit the result"


def test_the_committed_file_is_what_the_build_writes():
    """A change to guardrail/ or to the template that was not regenerated fails here."""
    assert build.OUT.read_text(encoding="utf-8") == build.render(), STALE


def test_the_check_fails_on_a_stale_file_and_passes_once_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    out = tmp_path / "filter.py"
    assert build.main(["--check", "--out", str(out)]) == 1
    assert build.COMMAND in capsys.readouterr().err
    assert build.main(["--out", str(out)]) == 0
    assert build.main(["--check", "--out", str(out)]) == 0
    assert build.main(["--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("was current")
    out.write_text(out.read_text() + "# edited by hand\n")
    assert build.main(["--check", "--out", str(out)]) == 1


def test_the_file_imports_only_the_standard_library_and_pydantic():
    """Open WebUI's interpreter has no package of ours (and always has pydantic)."""
    tree = ast.parse(build.OUT.read_text(encoding="utf-8"))
    modules = {alias.name for n in tree.body if isinstance(n, ast.Import) for alias in n.names}
    modules |= {n.module or "" for n in tree.body if isinstance(n, ast.ImportFrom)}
    top = {module.split(".")[0] for module in modules}
    assert top - set(sys.stdlib_module_names) == {"pydantic"}


def test_open_webui_reads_the_intended_frontmatter():
    text = build.OUT.read_text(encoding="utf-8")
    assert text.splitlines()[0] == '"""'  # Open WebUI reads no frontmatter otherwise
    keys = build._read_frontmatter(text)
    assert keys == build.frontmatter(build._project_version())
    assert {"title", "author", "version", "description", "license"} <= keys.keys()


def test_the_file_holds_nothing_open_webuis_loader_would_rewrite():
    text = build.OUT.read_text(encoding="utf-8")
    assert [phrase for phrase in build.OPEN_WEBUI_REWRITES if phrase in text] == []


def test_the_filter_core_is_the_librarys_own_source():
    """Every class and function of the filter's modules, and the policy the filter uses,
    appear in the file exactly as the library writes them."""
    text = build.OUT.read_text(encoding="utf-8")
    library = [
        ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        for module in build.LIBRARY
    ]
    policy = ast.parse(Path(guardrail.policy.__file__).read_text(encoding="utf-8"))
    wanted = {"RoundFilter", "needs_recovery"}
    nodes = [
        n for tree in library for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)
    ]
    nodes += [n for n in policy.body if getattr(n, "name", None) in wanted]
    names = {getattr(n, "name", "") for n in nodes}
    assert {"ScaffoldingFilter", "registry_with", "RoundFilter", "needs_recovery"} <= names
    pasted = {ast.dump(n) for n in ast.parse(text).body}
    assert [getattr(n, "name", "") for n in nodes if ast.dump(n) not in pasted] == []


def test_the_pasted_module_has_the_librarys_copy_and_registries():
    module = pasted_module()
    assert module.MALFORMED_REPLY == guardrail.policy.MALFORMED_REPLY
    assert set(module.PROFILES) == set(guardrail.registries.PROFILES)
    assert [p.start for p in module.DEFAULT_REGISTRY] == [
        p.start for p in guardrail.registries.DEFAULT_REGISTRY
    ]
    assert not hasattr(module, "with_correction")  # a filter cannot send a recovery


def test_a_template_name_the_library_does_not_define_fails_the_build():
    policy = build._Source.of(guardrail.policy.__file__)
    with pytest.raises(build.BuildError, match="defines no no_such_name"):
        build._picked(policy, {"no_such_name"})


@pytest.mark.parametrize("phrase", build.OPEN_WEBUI_REWRITES)
def test_text_open_webui_would_rewrite_fails_the_build(phrase: str):
    template = build._Source.of(filter_template.__file__)
    text = build.render() + f"# copied {phrase} somewhere\n"
    with pytest.raises(build.BuildError, match=f"would rewrite '{phrase}'"):
        build._check(text, template)


def test_a_docstring_line_open_webui_would_read_as_a_key_fails_the_build():
    template = build._Source.of(filter_template.__file__)
    text = build.render().replace("GENERATED FILE, do not", "note: GENERATED FILE, do not", 1)
    with pytest.raises(build.BuildError, match="would read this frontmatter"):
        build._check(text, template)


def test_a_file_that_does_not_parse_or_still_imports_ours_fails_the_build():
    template = build._Source.of(filter_template.__file__)
    with pytest.raises(build.BuildError, match="does not parse"):
        build._check(build.render() + "def (:\n", template)
    with pytest.raises(build.BuildError, match=r"still imports guardrail\.policy"):
        build._check(build.render() + "from guardrail.policy import scrub\n", template)


@pytest.mark.parametrize(
    ("late", "what"),
    [("import os", "an import"), ('__all__ = ["X"]', "`__all__`")],
    ids=["import", "__all__"],
)
def test_an_import_or_all_below_the_code_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late: str, what: str
):
    source = tmp_path / "late.py"
    source.write_text(f'"""Doc."""\n\nX = 1\n{late}\n')
    monkeypatch.setattr(build, "ROOT", tmp_path)
    with pytest.raises(build.BuildError, match=rf"late\.py: {what} after the first statement"):
        build._Source.of(source).body()


def test_no_library_modules_all_is_pasted():
    """The pasted file is one module: a library module's `__all__` would claim its names."""
    assert "__all__" not in build.OUT.read_text(encoding="utf-8")
    sources = [Path(module.__file__ or "").read_text(encoding="utf-8") for module in build.LIBRARY]
    assert any("__all__" in source for source in sources)  # a control: one has its own


def test_a_build_error_is_reported_with_exit_status_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    def broken() -> str:
        raise build.BuildError("the template imports ['x'], defined nowhere")

    monkeypatch.setattr(build, "render", broken)
    assert build.main(["--out", str(tmp_path / "f.py")]) == 2
    assert "build: the template imports" in capsys.readouterr().err
    assert not (tmp_path / "f.py").exists()


def test_long_member_lists_are_wrapped_as_ruff_formats_them():
    names: set[tuple[str, str | None]] = {(f"name_{i}", None) for i in range(12)}
    line = build._from_line("collections.abc", names)
    assert line.startswith("from collections.abc import (\n    name_0,\n")
    assert all(len(row) <= build.LINE_LENGTH for row in line.splitlines())
    assert build._from_line("typing", {("cast", None), ("Any", None), ("TYPE_CHECKING", None)}) == (
        "from typing import TYPE_CHECKING, Any, cast"
    )


def test_a_template_name_defined_nowhere_fails_the_build(tmp_path: Path):
    fake = tmp_path / "template.py"
    fake.write_text("from guardrail.policy import nothing_here\n")
    with pytest.raises(build.BuildError, match=r"imports \['nothing_here'\], defined nowhere"):
        build._check(
            build.render(), build._Source(fake, fake.read_text(), ast.parse(fake.read_text()))
        )


def test_a_module_without_docstring_gives_its_code_after_the_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    source = tmp_path / "plain.py"
    source.write_text("import os\n\nX = os.sep\n")
    monkeypatch.setattr(build, "ROOT", tmp_path)
    assert build._Source.of(source).body() == "X = os.sep\n"
    assert build._imports([build._Source.of(source)], {"X"}) == "\n"  # os unused: no import


def test_a_text_without_a_leading_docstring_has_no_frontmatter():
    assert build._read_frontmatter('x = 1\n"""\ntitle: no\n"""\n') == {}


def test_the_command_line_checks_the_committed_file():
    """`python -m scaffold_guard.integrations.openwebui.build --check`, as a person runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "scaffold_guard.integrations.openwebui.build", "--check"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"{build.OUT} is current"), done.stderr
