"""recovers-tool-rounds: a tool round whose content was only markup gets a recovery anyway.

The recovery rule looks at the round's visible text and what it stripped, but not at its
tool calls (`needs_recovery(..., tool_calls=0)`). A round that carried a real tool call and
raw markup in its content (the tool-with-scaffold flow: nothing visible, 98 characters
stripped) is taken for a scaffold-only answer: its tool call is dropped unrun and the
corrected recovery request goes out (the same messages, the correction line folded into the
system message, no tools). The mock plays that request the flow's answer, so the page shows
the clean answer and the turn ends `done`: only the journal shows the recovery. Rounds
without tool calls, and tool rounds with visible text, are `good`'s.

Must fail: G12 (a request of the tool turn carries the correction line). Also fails G14,
necessarily: the dropped call is never answered.
"""

from __future__ import annotations

from guardrail.policy import needs_recovery

from .base import BaseTarget, Round

MODE = "recovers-tool-rounds"
BREAKS = ("G12",)
ALSO_FAILS = ("G14",)


class Target(BaseTarget):
    MODE = MODE

    def recovery_due(self, one: Round) -> bool:
        return needs_recovery(
            stripped_chars=one.filter.stripped_chars,
            visible=one.visible,
            tool_calls=0,  # the bug: the round's tool calls are not looked at
        )
