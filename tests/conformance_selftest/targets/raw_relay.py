"""raw-relay: no guardrail at all. The kit must fail it on NEVER (raw markup in the page).

The model's answer text goes to the page exactly as it came: nothing is stripped, so no
request ever looks scaffold-only and no recovery is sent. Everything else (thinking, Stop,
the log line's shape) is as in `good`.

Must fail: NEVER. Also fails, necessarily, every clause whose flow carries complete markup:
G2 (no recovery: one request, the markup shown), G3 (scaffold-repeat ends `done` with the
markup), G4, G5, G6, G8 (the unterminated span is shown), G10 (scaffold_stripped=0 where
the flow's markup should have been counted), G12 (tool-with-scaffold's tool round shows
its markup, before the answer) and G13 (DeepSeek's DSML, stripped for any model, is shown).
Passes G1, G7, G9, G11, G14 and G15.
"""

from __future__ import annotations

from .base import BaseTarget, TextFilter

MODE = "raw-relay"
BREAKS = ("NEVER",)
ALSO_FAILS = ("G2", "G3", "G4", "G5", "G6", "G8", "G10", "G12", "G13")


class PassThrough:
    """A filter that filters nothing."""

    stripped_chars = 0
    first_span = ""

    def feed(self, chunk: str) -> str:
        return chunk

    def flush(self) -> str:
        return ""


class Target(BaseTarget):
    MODE = MODE

    def new_filter(self) -> TextFilter:
        return PassThrough()
