"""The app under check, as every clause sees it: its page, its mock, its log and the bounds.

A plain value, built once per worker by the `conformance_target` fixture (conformance/
fixtures.py) and handed to the preflight, the plays, the evidence and the clauses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.profile import Profile
    from conformance.upstream import Upstream


@dataclass(frozen=True)
class Target:
    app_url: str
    mock_url: str
    log_file: Path | None
    profile: Profile
    upstream: Upstream
    timeout_s: float
    artifacts: Path
    stop_within_ms: float  # G11: the longest the disconnect may follow Stop
