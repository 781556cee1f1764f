"""Which step of its flow a request plays: the turn-step engine.

A turn is named by its KEY when the trigger has one (`[[mock:FLOW#KEY]]`), otherwise by the
last user message's text. The n-th request of a turn plays step n. For a keyed turn the
last step then repeats forever, so an app that asks once too often is seen asking. A keyless
turn starts over once it has played all its steps, or after a quiet spell with no request,
so typing the same trigger twice in a page behaves the same both times.

The tracker is pure state with an injected clock; it remembers at most `capacity` turns
(least recently used forgotten first), so a long-running server's memory stays bounded.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_QUIET_RESET_S = 5.0
DEFAULT_CAPACITY = 10_000


@dataclass(frozen=True)
class TurnPosition:
    """Where a request falls: its 1-based number in the turn and the 0-based step it plays."""

    request_number: int
    step_index: int


@dataclass
class _TurnState:
    played: int
    last_seen: float


class TurnTracker:
    def __init__(
        self,
        quiet_reset_s: float = DEFAULT_QUIET_RESET_S,
        capacity: int = DEFAULT_CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._quiet_reset_s = quiet_reset_s
        self._capacity = capacity
        self._clock = clock
        self._turns: OrderedDict[tuple[str, str, str], _TurnState] = OrderedDict()

    def advance(self, flow: str, step_count: int, key: str | None, text: str) -> TurnPosition:
        """Record one request of a turn and say which step it plays."""
        now = self._clock()
        ident = (flow, "key", key) if key is not None else (flow, "text", text)
        state = self._turns.pop(ident, None)
        if state is None or (key is None and self._keyless_turn_over(state, step_count, now)):
            state = _TurnState(played=0, last_seen=now)
        position = TurnPosition(
            request_number=state.played + 1, step_index=min(state.played, step_count - 1)
        )
        state.played += 1
        state.last_seen = now
        self._turns[ident] = state
        while len(self._turns) > self._capacity:
            self._turns.popitem(last=False)
        return position

    def _keyless_turn_over(self, state: _TurnState, step_count: int, now: float) -> bool:
        return state.played >= step_count or now - state.last_seen > self._quiet_reset_s

    def __len__(self) -> int:
        return len(self._turns)
