"""Third-party layer: real programs a user runs (Open WebUI, LiteLLM's proxy), each from a
pinned, isolated venv of its own (tests/thirdparty/venvs.py), against our mock and guard.

Too slow for the gate (./validate.sh): `scripts/slow_suites.sh` runs all of it after the gate
(CI does, through .ci/run), or by hand `uv run pytest tests/thirdparty -n 0`
(docs/integrations.md gives each suite's time): the installs are large (Open WebUI with torch
is about 2 GB) and a first run makes them (minutes). Every test here is marked `thirdparty`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.thirdparty)
