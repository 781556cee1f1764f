"""Fail when the built wheel lacks a file its packages have in the checkout.

The packages and the folders mapped into them are pyproject.toml's
`[tool.hatch.build.targets.wheel]` (`packages`, `force-include`); the checkout's files are
what git tracks under them. Exits 0 when every one is in the wheel, 1 naming those missing.

Usage: uv run python scripts/wheel_contents.py DIST/scaffold_guard-*.whl
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def expected_files() -> set[str]:
    """Every file the wheel should hold, as its path inside the wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    places: dict[str, str] = {package: package for package in wheel["packages"]}
    places.update(wheel.get("force-include", {}))
    found: set[str] = set()
    for source, target in places.items():
        tracked = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "--", source],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
        found.update(target + path[len(source) :] for path in tracked)
    return found


def main(wheel: str) -> int:
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
    missing = sorted(expected_files() - held)
    if missing:
        print(f"{Path(wheel).name} lacks {len(missing)} file(s) of the checkout:", *missing,
              sep="\n  ")  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
