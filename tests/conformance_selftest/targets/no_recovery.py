"""no-recovery: filters correctly but never sends the recovery request.

Every request's answer text goes through the filter as in `good`, and scaffold_stripped is
right, but a round whose visible text is empty because it was all scaffolding ends the turn
as it is: a `done` frame and a blank answer, one request in the mock's journal.

Must fail: G2 (no recovery on scaffold-recover: one request, a blank answer). Also fails,
necessarily: G5 (scaffold-split is scaffold-recover in one-character chunks: no recovery
either); G3 (with no recovery there is no empty recovery to end in the error frame, so
scaffold-repeat ends `done` with a blank answer too); G10 on scaffold-repeat, where the
kit expects the two requests' sum (this target only ever makes the one); and G13 on
deepseek-dsml-bars, a DSML-only answer that needs its recovery the same way.
"""

from __future__ import annotations

from .base import BaseTarget

MODE = "no-recovery"
BREAKS = ("G2",)
ALSO_FAILS = ("G3", "G5", "G10", "G13")


class Target(BaseTarget):
    MODE = MODE
    RECOVERS = False
