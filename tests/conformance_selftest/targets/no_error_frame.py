"""no-error-frame: an empty recovery ends the turn `done`, with a blank answer.

Everything is as in `good` up to the recovery; when the recovery's visible text is empty
too, the server sends a normal `done` frame instead of the malformed-reply error frame, so
the page shows a finished turn with an empty answer and no error.

Must fail: G3 (scaffold-repeat: `done` and no error state), and nothing else.
"""

from __future__ import annotations

from .base import BaseTarget, Frame, TurnRecord

MODE = "no-error-frame"
BREAKS = ("G3",)
ALSO_FAILS: tuple[str, ...] = ()


class Target(BaseTarget):
    MODE = MODE

    def recovery_failed(self, record: TurnRecord) -> Frame:
        return {"type": "done", "turn": record.turn_id, "mode": "deflected", "sources": []}
