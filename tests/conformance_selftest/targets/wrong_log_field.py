"""wrong-log-field: the log line's scaffold_stripped is the last request's count, not the sum.

Everything the page sees is `good`'s. The bug is in the bookkeeping: each finished request
sets the turn's count (`=`) instead of adding to it (`+=`). A one-request turn is right; a
turn with a recovery reports only the recovery's count: scaffold_stripped=0 for
scaffold-recover (the clean recovery stripped nothing) and half the sum for scaffold-repeat.

Must fail: G10, and nothing else.
"""

from __future__ import annotations

from .base import BaseTarget, TurnRecord

MODE = "wrong-log-field"
BREAKS = ("G10",)
ALSO_FAILS: tuple[str, ...] = ()


class Target(BaseTarget):
    MODE = MODE

    def add_stripped(self, record: TurnRecord, stripped: int) -> None:
        record.scaffold_stripped = stripped  # the bug: = instead of +=
