"""The `scaffold-guard` command: a subcommand per part, each its entry's own options, and a
part whose extra is missing named as such. In process (each part's parser is read, nothing is
served); the installed command and the bare install: scripts/check_wheel.sh."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from guardrail.registries import PROFILES
from scaffold_guard.cli import PARTS, main


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_the_overview_names_every_part_and_its_extra(capsys: pytest.CaptureFixture[str]):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for part in PARTS:
        assert f"  {part.name} " in out
        assert not part.extra or f"[{part.extra}]" in out


def test_no_subcommand_is_a_usage_error_that_shows_the_overview(
    capsys: pytest.CaptureFixture[str],
):
    assert main([]) == 2
    assert "subcommands" in capsys.readouterr().out


def test_an_unknown_subcommand_is_a_usage_error_naming_it(capsys: pytest.CaptureFixture[str]):
    assert main(["serve"]) == 2
    assert "no subcommand 'serve'" in capsys.readouterr().err


def test_the_guards_help_is_its_entrys_with_every_option_and_profile(
    capsys: pytest.CaptureFixture[str],
):
    out = " ".join(help_of(capsys, "guard").split())  # argparse wraps at any hyphen
    assert out.startswith("usage: scaffold-guard guard ")
    for option in ("--upstream", "--upstream-ollama", "--profiles", "--workers", "--port"):
        assert option in out
    listed = out.split("--profiles PROFILES", 1)[1].replace("- ", "-")
    assert [name for name in PROFILES if name not in listed] == []


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        (("mock",), ("--flows", "--side-call", "--port")),
        (("record",), ("--upstream", "--out", "--redact")),
        (("kit", "init"), ("--mock-url", "--out", "--chromium-path")),
        (("app",), ("--host", "--port")),
    ],
    ids=["mock", "record", "kit-init", "app"],
)
def test_each_parts_help_is_its_entrys_under_the_commands_name(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], options: tuple[str, ...]
):
    out = help_of(capsys, *argv)
    assert out.startswith(f"usage: scaffold-guard {' '.join(argv)} ")
    assert [option for option in options if option not in out] == []


def test_the_kits_help_names_its_commands_and_built_in_profiles(
    capsys: pytest.CaptureFixture[str],
):
    assert main(["kit", "--help"]) == 0
    out = capsys.readouterr().out
    assert "scaffold-guard kit init URL" in out
    assert "scaffold-guard kit run" in out
    assert "built-in profiles (--profile): openwebui" in out


def test_a_part_whose_extra_is_missing_says_which_and_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    def without_uvicorn(name: str, *args: Any) -> Any:
        raise ModuleNotFoundError("No module named 'uvicorn'", name="uvicorn")

    monkeypatch.setattr(importlib, "import_module", without_uvicorn)
    assert main(["mock", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "scaffold-guard mock needs the 'mock' extra (uvicorn is not installed)" in err
    assert "pip install 'scaffold-guard[mock]'" in err
    assert "uvx 'scaffold-guard[mock]' mock" in err


def test_the_guard_needs_no_extra_so_a_module_it_lacks_is_a_bug(monkeypatch: pytest.MonkeyPatch):
    def without_h11(name: str, *args: Any) -> Any:
        raise ModuleNotFoundError("No module named 'h11'", name="h11")

    monkeypatch.setattr(importlib, "import_module", without_h11)
    with pytest.raises(ModuleNotFoundError):
        main(["guard", "--help"])


def test_a_module_of_ours_that_is_missing_is_a_bug_not_an_extra(
    monkeypatch: pytest.MonkeyPatch,
):
    def without_our_own(name: str, *args: Any) -> Any:
        raise ModuleNotFoundError("No module named 'guard.http'", name="guard.http")

    monkeypatch.setattr(importlib, "import_module", without_our_own)
    with pytest.raises(ModuleNotFoundError):
        main(["guard", "--help"])
