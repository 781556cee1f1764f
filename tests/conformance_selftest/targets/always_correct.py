"""always-correct: the correction line is in every request's system message, from the start.

The server folds the guardrail's correction line (guardrail.policy.CORRECTION_INSTRUCTION)
into its system prompt "to prevent leaks up front", so every request carries it, a clean
turn's one request included. Everything else is `good`'s: the filter, the one recovery (whose
system message is the first request's, extended by the correction line once more), the
error frame, the log line, Stop. This target offers no tools: it is a plain chat app, and
its profile does not declare `tools` (with tools, the G12 check, which looks for the
correction line in every request of a tool turn, would see it too).

Must fail: G1 (the clean turn's request carries the correction line although nothing was
stripped). Also fails, necessarily, G13 and G15, which count the correction lines of the
family flows' turns (none where nothing was stripped, one per recovery).
"""

from __future__ import annotations

from guardrail.policy import CORRECTION_INSTRUCTION
from scaffold_guard.app.rag.types import ChatMessage

from .base import SYSTEM_PROMPT, BaseTarget

MODE = "always-correct"
BREAKS = ("G1",)
ALSO_FAILS = ("G13", "G15")


class Target(BaseTarget):
    MODE = MODE
    OFFERS_TOOLS = False

    def first_messages(self, question: str) -> list[ChatMessage]:
        return [
            {"role": "system", "content": f"{SYSTEM_PROMPT}\n\n{CORRECTION_INSTRUCTION}"},
            {"role": "user", "content": question},
        ]
