"""scripts/wheel_contents.py: the wheel check fails on a wheel that lacks a checkout file,
holds a top-level name that is not one of its packages, requires a server framework without an
extra, or declares no `scaffold-guard` command."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from scripts.wheel_contents import (  # pyright: ignore[reportMissingTypeStubs]
    CONSOLE_SCRIPT,
    expected_files,
    main,
)

INFO = "scaffold_guard-0.1.0.dist-info"
METADATA = (
    "Metadata-Version: 2.4\nName: scaffold-guard\n"
    "Requires-Dist: h11>=0.16\nRequires-Dist: httpx>=0.27\nRequires-Dist: orjson>=3.13.0\n"
    "Requires-Dist: uvicorn[standard]>=0.30; extra == 'proxy'\n"
)
ENTRY_POINTS = f"[console_scripts]\n{CONSOLE_SCRIPT}\n"


def wheel_with(
    files: set[str], path: Path, metadata: str = METADATA, entry_points: str = ENTRY_POINTS
) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name in sorted(files):
            archive.writestr(name, "")
        archive.writestr(f"{INFO}/METADATA", metadata)
        archive.writestr(f"{INFO}/entry_points.txt", entry_points)
    return str(path)


def test_the_expected_files_are_the_packages_and_the_page_inside_the_app():
    files = expected_files()
    assert "conformance/browser/js/recorder.js" in files
    assert (
        "scaffold_guard/app/frontend/index.html" in files
    )  # frontend/ force-included as scaffold_guard/app/frontend
    assert not any(name.startswith("frontend/") for name in files)


def test_a_wheel_with_every_file_passes(tmp_path: Path):
    assert main(wheel_with(expected_files(), tmp_path / "whole.whl")) == 0


def test_a_wheel_that_lacks_a_file_fails_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    lost = "conformance/browser/js/recorder.js"
    assert main(wheel_with(expected_files() - {lost}, tmp_path / "lacking.whl")) == 1
    assert lost in capsys.readouterr().out


@pytest.mark.parametrize("name", ["app/__init__.py", "integrations/litellm_guardrail.py"])
def test_a_wheel_with_a_top_level_name_a_users_project_has_fails_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
):
    assert main(wheel_with({*expected_files(), name}, tmp_path / "more.whl")) == 1
    assert f"holds top-level names that are not its packages: {name.split('/')[0]}" in (
        capsys.readouterr().out
    )


def test_a_wheel_that_requires_a_server_framework_without_an_extra_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    metadata = METADATA + "Requires-Dist: fastapi>=0.115\n"
    assert main(wheel_with(expected_files(), tmp_path / "heavy.whl", metadata=metadata)) == 1
    out = capsys.readouterr().out
    assert "requires ['fastapi', 'h11', 'httpx', 'orjson'] without an extra" in out


def test_a_wheel_without_the_command_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(wheel_with(expected_files(), tmp_path / "bare.whl", entry_points="")) == 1
    assert "declares no console script" in capsys.readouterr().out
