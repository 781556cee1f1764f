"""The app under check, as every clause sees it: its page, its mock, its log and the bounds.

A plain value, built once per worker by the `conformance_target` fixture
(conformance/plugin/fixtures.py) and handed to the preflight, the plays, the evidence and
the clauses. It lives with the oracle, the lowest room that reads it: the run, the report
and the plugin stand on the oracle, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from conformance.oracle.upstream import Upstream
    from conformance.profiles.model import Profile

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
    the guard proxy's in front of the app (`--guard-log`; conformance/oracle/guard_log.py)."""

    @property
    def judges_log(self) -> bool:
        """Whether G10 is judged: the profile declares the app's log, or the guard's is given."""
        return self.log_source == "guard" or self.profile.has("log")
