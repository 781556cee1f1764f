"""scripts/wheel_contents.py: the wheel check fails on a wheel that lacks a checkout file."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from scripts.wheel_contents import expected_files, main  # pyright: ignore[reportMissingTypeStubs]


def wheel_with(files: set[str], path: Path) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name in sorted(files):
            archive.writestr(name, "")
    return str(path)


def test_the_expected_files_are_the_packages_and_the_page_inside_the_app():
    files = expected_files()
    assert "conformance/browser/js/recorder.js" in files
    assert "app/frontend/index.html" in files  # frontend/ force-included as app/frontend
    assert not any(name.startswith("frontend/") for name in files)


def test_a_wheel_with_every_file_passes(tmp_path: Path):
    assert main(wheel_with(expected_files(), tmp_path / "whole.whl")) == 0


def test_a_wheel_that_lacks_a_file_fails_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    lost = "conformance/browser/js/recorder.js"
    assert main(wheel_with(expected_files() - {lost}, tmp_path / "lacking.whl")) == 1
    assert f"  {lost}" in capsys.readouterr().out
