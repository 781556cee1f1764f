"""A played flow: everything the clauses judged on it read of its turn.

The run plays each flow once per worker (conformance/run/plays.py) and keeps what the page
showed, what it recorded and where the log stood; the turn's requests are read from the mock
the first time a clause asks for them, so two clauses judged on one flow judge the same turn.

Deliberate choices:
- A flow whose turn could not be played is kept with its error: every clause on it is
  `not judged` with that one cause (PlayFailed; the plugin never makes it the clause's
  failure, so a turn that never finished is no leak).
- The recorder's positive control is kept as a flag: only the clause that reads the
  recording (NEVER) fails when the recorder was not live.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.browser.chat import TurnView
    from conformance.browser.recording import Sighting
    from mock_llm.client import JournalRecord


class PlayFailed(AssertionError):
    """The flow's turn could not be played to its end, so no clause can be judged on it."""


@dataclass
class Play:
    """One played flow: what the page showed, and the turn's requests once read."""

    flow: str
    keys: tuple[str, ...]  # the question's KEY, then the follow-up's
    views: tuple[TurnView, ...]  # the question's view, then the follow-up's
    recorded: str  # everything the page showed, from the fresh document to the end
    recorder_live: bool
    sightings: tuple[Sighting, ...]  # the markers (and canary) the page showed, first each
    log_offset: int  # the app log's size before the question was sent
    trace: Path | None
    error: str | None  # why the question's turn could not be played to its end
    follow_up_error: str | None  # why the follow-up's could not
    read_requests: Callable[[str], list[JournalRecord]] = field(repr=False)
    _requests: dict[str, list[JournalRecord]] = field(
        default_factory=dict[str, list["JournalRecord"]], repr=False
    )

    @property
    def key(self) -> str:
        return self.keys[0]

    @property
    def view(self) -> TurnView:
        return self.views[0]

    @property
    def follow_up(self) -> TurnView | None:
        """The follow-up's view (None when it could not be played: see follow_up_error)."""
        return self.views[1] if len(self.views) > 1 else None

    def requests(self, key: str | None = None) -> list[JournalRecord]:
        """The turn's own requests (the question's, or the follow-up's `key`), read once."""
        key = key or self.key
        if key not in self._requests:
            self._requests[key] = self.read_requests(key)
        return self._requests[key]


PlayFlow = Callable[[str], Play]
"""`play(flow)`: the flow's play (the `conformance_play` fixture)."""
