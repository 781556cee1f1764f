"""filtered-thinking: the reasoning text goes through the scaffolding filter too.

Each request's thinking pieces go through a filter of their own (a fresh ScaffoldingFilter
per request, its held tail flushed at the request's end, its count kept out of the log
line), so the thinking display shows the model's reasoning with the markup cut out: for
the thinking-scaffold flow, "I could call  but no tools are offered, ...". The answer text,
the recovery, the error frame, the log line and Stop are `good`'s.

Must fail: G9 (the thinking display must show `<|tool_call_start|>` raw), and nothing else.
"""

from __future__ import annotations

from guardrail.scaffolding import ScaffoldingFilter

from .base import BaseTarget, TextFilter

MODE = "filtered-thinking"
BREAKS = ("G9",)
ALSO_FAILS: tuple[str, ...] = ()


class Target(BaseTarget):
    MODE = MODE

    def new_thinking_filter(self) -> TextFilter | None:
        return ScaffoldingFilter()  # the bug: the scratchpad is filtered like the answer
