"""Wait for a turn to settle: the rule (pure) and the wait on journal changes (events).

A turn has settled when its KEY has at least one journal entry, none is in progress, no
request is still being read (its key unknown, so it could be this turn's), and none of its
entries arrived or ended in the last `settle_ms` milliseconds. Measuring the quiet from the
last arrival *or end* matters: an app sends its recovery request only after the first
answer has streamed to its end, so the gap to wait out starts there.

The wait is event-driven: the journal pulses a `ChangeSignal` on every change, and a waiter
sleeps until that pulse or until the quiet period it is in would be over, whichever comes
first, then checks again (anyio events, which are asyncio events under uvicorn). Nothing
polls. The whole wait is bounded by the read's `timeout_ms`; when that runs out the read
answers with what there is, and says whether it had settled at that moment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import anyio

from mock_llm.journal.query import JournalQuery
from mock_llm.journal.store import Journal, JournalEntry


def quiet_left_ms(
    entries: Sequence[JournalEntry], now_ms: float, settle_ms: float, reading: bool = False
) -> float | None:
    """0 when the turn of `entries` has settled; else how long until it may have, in ms.

    None means it cannot settle before something changes: no entry yet, one in progress, or
    (`reading`) a request whose key is not known yet.
    """
    if reading or not entries or any(e.outcome == "in_progress" for e in entries):
        return None
    last = max(e.last_activity_ms for e in entries)
    return max(0.0, last + settle_ms - now_ms)


class ChangeSignal:
    """Wakes every task waiting on it at the moment of a pulse.

    Each waiter has an event of its own, made in its own event loop, and takes it away
    again however its wait ends, so nothing outlives a wait and no event is shared between
    loops (an app may be served by more than one loop in its life, as in tests).
    """

    def __init__(self) -> None:
        self._waiters: set[anyio.Event] = set()

    async def wait(self, timeout_s: float = math.inf) -> None:
        """Return at the next pulse, or after `timeout_s`, whichever comes first."""
        event = anyio.Event()
        self._waiters.add(event)
        try:
            with anyio.move_on_after(timeout_s):
                await event.wait()
        finally:
            self._waiters.discard(event)

    def pulse(self) -> None:
        for event in self._waiters:
            event.set()
        self._waiters.clear()

    def __len__(self) -> int:
        """How many tasks are waiting."""
        return len(self._waiters)


def _left(journal: Journal, query: JournalQuery, settle_ms: int) -> float | None:
    entries = journal.entries(key=query.key, flow=query.flow)
    return quiet_left_ms(entries, journal.clock.now_ms(), settle_ms, journal.any_unidentified())


async def wait_settled(journal: Journal, signal: ChangeSignal, query: JournalQuery) -> bool:
    """Wait until the query's turn has settled (True) or its timeout ran out (False then,
    unless it settled at that very moment)."""
    settle_ms = query.settle_ms if query.settle_ms is not None else 0
    with anyio.move_on_after(query.timeout_ms / 1000):
        while True:
            # No await between the check and the wait's start, so no pulse falls between.
            left = _left(journal, query, settle_ms)
            if left == 0:
                return True
            await signal.wait(math.inf if left is None else left / 1000)
    return _left(journal, query, settle_ms) == 0
