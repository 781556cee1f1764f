"""Events kept back from the client while a reply may still need its one recovery. Pure.

The APIs whose stream announces a text before the text comes (a Responses `message` item, a
Messages `text` block) open it with events that carry no text. Sent at once, a reply that
turns out to be nothing but markup would leave the client an empty item or block, the
recovery's answer after it; so a stream guard holds those events from the announcement
until the text shows something visible, then sends them in order (`end`), or drops them
with the recovery (`end`, unsent). What is held, and when a hold ends, is each API's
(guard/wire/responses_stream.py, guard/wire/messages_stream.py); the keeping is this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class Hold(Generic[T]):
    """Items kept back, in order, while holding."""

    _kept: list[T] | None = None  # None: not holding

    @property
    def holding(self) -> bool:
        return self._kept is not None

    def begin(self) -> None:
        """Hold what comes from now on (what is already held stays)."""
        if self._kept is None:
            self._kept = []

    def keep(self, item: T) -> bool:
        """Keep `item` back if holding; whether it was kept (if not, it goes out now)."""
        if self._kept is None:
            return False
        self._kept.append(item)
        return True

    def end(self) -> list[T]:
        """Stop holding: what was kept, in the order it came, to send or to drop."""
        kept, self._kept = self._kept or [], None
        return kept
