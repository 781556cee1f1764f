"""Each flow played once per worker, and what it showed kept for every clause judged on it.

Several clauses look at one flow from different sides (the page, the requests, the log
line), so a play asks the flow's question once and keeps it all (a `Play`,
conformance/oracle/played.py): two clauses judged on one flow always judge the same
turn.
The requests are read from the mock on first need.

Deliberate choices:
- Plays are per worker (a session fixture): nothing is shared between processes.
- A play that raised is kept as its error (its exception as `Type: message`, `describe`):
  every clause on it is `not judged` with that one cause, it is not played again, and the
  next play gets a new page.
- The recorder's positive control is kept as a flag, never raised: only the clause that
  reads the recording (NEVER) fails when the recorder was not live.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.browser.recording import page_text
from conformance.oracle.clauses import MARKERS
from conformance.oracle.logs import log_size
from conformance.oracle.played import Play
from conformance.run.questions import question

if TYPE_CHECKING:
    from conformance.browser.chat import TurnView
    from conformance.browser.session import BrowserSession
    from conformance.oracle.target import Target

FOLLOW_UPS = {"scaffold-repeat": "clean"}
"""Flows whose play asks a second question on the same page once the first has ended (G3:
after the terminal error, the page still answers)."""


class Plays:
    """The worker's plays by flow, each played on first use."""

    def __init__(
        self,
        target: Target,
        session: BrowserSession,
        new_key: Callable[[], str],
        traces: Path,
    ) -> None:
        self._target = target
        self._session = session
        self._new_key = new_key
        self._traces = traces
        self._played: dict[str, Play] = {}

    def get(self, flow: str) -> Play:
        if flow not in self._played:
            self._played[flow] = self._play(flow)
        return self._played[flow]

    def _play(self, flow: str) -> Play:
        session = self._session
        flows = (flow, *([FOLLOW_UPS[flow]] if flow in FOLLOW_UPS else []))
        keys = tuple(self._new_key() for _ in flows)
        for key in keys:  # where the journal stands: a read then knows if any was dropped
            self._target.upstream.begin(key)
        offset = log_size(self._target.log_file)
        traced = session.begin_chunk(f"play {flow}")
        trace = self._traces / f"{len(self._played) + 1:02d}-{flow}.zip" if traced else None
        chat = session.chat()
        expected = self._target.upstream.expected(flow)
        canary = expected.canary if expected is not None else None
        chat.recording.watch((*MARKERS, *([canary] if canary else [])))
        views: list[TurnView] = []
        live, error, follow_up_error = False, None, None
        try:
            chat.open()
            views.append(chat.ask(question(flow, keys[0])))
        except Exception as exc:
            error = describe(exc)
        if error is None and len(flows) > 1:
            try:
                views.append(chat.ask(question(flows[1], keys[1])))
            except Exception as exc:
                follow_up_error = describe(exc)
        if error is None:
            try:
                chat.prove_live()
                live = True
            except Exception:
                live = False
        recorded = page_text(chat.recorded)
        sightings = tuple(chat.recording.sightings)
        if traced:
            session.end_chunk(trace)
        if error is not None or follow_up_error is not None:
            session.discard_page()
        read = self._target.upstream.requests
        return Play(flow, keys, tuple(views), recorded, live, sightings, offset, trace, error,
                    follow_up_error, read)  # fmt: skip


def describe(exc: BaseException, *, first_line: bool = False) -> str:
    """The exception as `Type: message`, for a play's error and its evidence; with
    `first_line`, only the message's first line, for a one-line preflight failure
    (Playwright's errors carry a call log after it)."""
    text = str(exc)
    if first_line:
        lines = text.strip().splitlines()
        text = lines[0] if lines else ""
    return f"{type(exc).__name__}: {text}"
