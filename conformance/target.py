"""The app under check, as every clause sees it: its page, its mock, its log and the bounds.

A plain value, built once per worker by the `conformance_target` fixture (conformance/
fixtures.py) and handed to the preflight, the plays, the evidence and the clauses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from conformance.profiles.model import Profile
    from conformance.upstream import Upstream

LogSource = Literal["app", "guard"]


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
    log_source: LogSource = "app"
    """Whose log `log_file` is: the app's own per-turn log (its profile's `[log]` line), or
    the guard proxy's in front of the app (`--guard-log`; conformance/guard_log.py)."""

    @property
    def judges_log(self) -> bool:
        """Whether G10 is judged: the profile declares the app's log, or the guard's is given."""
        return self.log_source == "guard" or self.profile.has("log")


def log_size(log: Path | None) -> int:
    """The log's size now (0 while it does not exist): where a turn's lines will start."""
    return log.stat().st_size if log is not None and log.exists() else 0
