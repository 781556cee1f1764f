"""drops-tool-calls: a round whose content carried markup loses its real tool calls too.

The filter strips the markup as `good` does, but the target takes a round that stripped
something for a round of leaked calls, and throws away its structured tool calls as well,
as a client that "cleans up" every call it sees around leaked markup would. Such a round
(the tool-with-scaffold flow: a real `read` call next to raw markup) then ends the turn
with nothing to show and no recovery (it had a tool call, so none is due): the call the
model asked for is never run and never answered. Rounds that stripped nothing keep their
calls.

Must fail: G14 (the tool round is never followed by the request carrying its result), and
nothing else: G12 still holds (no correction line is ever sent for the round).
"""

from __future__ import annotations

from .base import BaseTarget, Round

MODE = "drops-tool-calls"
BREAKS = ("G14",)
ALSO_FAILS: tuple[str, ...] = ()


class Target(BaseTarget):
    MODE = MODE

    def recovery_due(self, one: Round) -> bool:
        due = super().recovery_due(one)
        if one.filter.stripped_chars:
            one.tool_calls.clear()  # the bug: the real calls go with the markup
        return due
