"""double-recovery: two recovery requests where the contract allows exactly one.

When a recovery is due, the server first sends the corrected request once "to be sure"
and reads its answer to the end without using it (nothing of it is shown or counted), then
sends the same corrected request again and streams that one as `good` streams its recovery.
The page shows exactly what `good` shows; the mock's journal shows three requests for the
scaffold-recover flow (the second and third both corrected) instead of two. On
scaffold-repeat the last request is empty too, so the turn still ends with the
malformed-reply error frame.

Must fail: G2 ("exactly one recovery request", "at most one recovery per turn"). Also fails,
necessarily, the clauses whose flows need a recovery too, where the kit counts the requests
the same way: G3 (scaffold-repeat: three requests, not two), G5 (scaffold-split: three
requests, not two) and G13 (deepseek-dsml-bars: three requests, not two).
"""

from __future__ import annotations

from scaffold_guard.app.rag.types import ChatMessage

from .base import BaseTarget, TurnRecord

MODE = "double-recovery"
BREAKS = ("G2",)
ALSO_FAILS = ("G3", "G5", "G13")


class Target(BaseTarget):
    MODE = MODE

    async def before_recovery(self, messages: list[ChatMessage], record: TurnRecord) -> None:
        record.rounds += 1
        async with self.upstream(messages) as pieces:
            async for _ in pieces:
                pass  # read to the end, thrown away
