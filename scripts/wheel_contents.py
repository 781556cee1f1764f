"""Fail when the built wheel lacks a file its packages have in the checkout, or holds more.

The packages and the folders mapped into them are pyproject.toml's
`[tool.hatch.build.targets.wheel]` (`packages`, `force-include`); the checkout's files are
what git tracks under them. The wheel's top level must be exactly those packages (so nothing
named `app`, `integrations` or `tests` lands in a user's environment), its bare requirements
no server framework (`BARE_REQUIREMENTS`), and its `scaffold-guard` command declared. Exits 0
when all holds, 1 naming what does not.

Usage: uv run python scripts/wheel_contents.py DIST/scaffold_guard-*.whl
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BARE_REQUIREMENTS = {"h11", "httpx", "orjson"}
"""What `pip install scaffold-guard` alone brings: the filter is the standard library, the
transport needs httpx and orjson, the bare install's proxy server h11 (httpx's own); the
full proxy server, the mock, the app and the kit are extras."""
CONSOLE_SCRIPT = "scaffold-guard = scaffold_guard.cli:main"


@functools.cache
def wheel_target() -> dict[str, Any]:
    """pyproject.toml's `[tool.hatch.build.targets.wheel]`."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["hatch"]["build"]["targets"]["wheel"]


def expected_files() -> set[str]:
    """Every file the wheel should hold, as its path inside the wheel."""
    wheel = wheel_target()
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


def shipped_packages() -> set[str]:
    return set(wheel_target()["packages"])


def bare_requirements(metadata: str) -> set[str]:
    """The names of the requirements a wheel's METADATA holds without an extra's marker."""
    names: set[str] = set()
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            requirement = line.removeprefix("Requires-Dist:").strip()
            names.add(re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower())
    return names


def problems(wheel: str) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
        info = next((name.split("/")[0] for name in held if ".dist-info/" in name), None)
        if info is None:
            return ["has no .dist-info folder"]

        def read(name: str) -> str:
            path = f"{info}/{name}"
            return archive.read(path).decode() if path in held else ""

        metadata, entry_points = read("METADATA"), read("entry_points.txt")
    found: list[str] = []
    missing = sorted(expected_files() - held)
    if missing:
        found.append(f"lacks {len(missing)} file(s) of the checkout: " + ", ".join(missing))
    top = {name.split("/")[0].removesuffix(".py") for name in held} - {info}
    if extra := sorted(top - shipped_packages()):
        found.append(f"holds top-level names that are not its packages: {', '.join(extra)}")
    if (bare := bare_requirements(metadata)) != BARE_REQUIREMENTS:
        found.append(f"requires {sorted(bare)} without an extra, not {sorted(BARE_REQUIREMENTS)}")
    if CONSOLE_SCRIPT not in entry_points:
        found.append(f"declares no console script `{CONSOLE_SCRIPT}`")
    return found


def main(wheel: str) -> int:
    found = problems(wheel)
    for problem in found:
        print(f"{Path(wheel).name} {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
