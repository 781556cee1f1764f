"""The environment for a child process a test starts (`python -m app`, `python -m mock_llm`).

A child gets a minimal environment, so no SG_ setting of the developer's leaks into it,
plus coverage's own variables, so that `patch = subprocess` measures the child too.
"""

from __future__ import annotations

import os
from pathlib import Path


def child_env(home: Path, **extra: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")}
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), **inherited, **extra}
