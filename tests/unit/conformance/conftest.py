"""Shared by the kit's unit tests: no CONFORMANCE_* variable of the outer run reaches them."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def no_kit_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CONFORMANCE_* variable of the outer run reaches an inner one (pytester)."""
    for name in [n for n in os.environ if n.startswith("CONFORMANCE_")]:
        monkeypatch.delenv(name)
