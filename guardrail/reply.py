"""A reply's filters, and the contract's two decisions that follow from them. Pure.

A reply (one upstream answer, streamed or whole) shows its text through one `RoundFilter`
per choice, content part or text block. `ReplyFilters` keeps those filters, sums their
counts, and takes the decisions every adapter shares: the one recovery (`wants_recovery`:
G2, never for a reply that carried a tool call, G12, and only for a single-choice reply,
since with several there is no one reply to ask again) and the recovery that showed
nothing (`malformed`, G3). The guard proxy's reply guards and the LiteLLM filters are made
of it; each adds its own wire format, identity handling included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guardrail.patterns import Registry
from guardrail.policy import RoundFilter, needs_recovery, recovery_failed

__all__ = ["ReplyFilters"]


@dataclass(eq=False)  # compared and hashed by identity, as the filters it holds
class ReplyFilters:
    registry: Registry
    single_choice: bool = True
    follows: ReplyFilters | None = None  # the reply this one recovers
    tool_calls: bool = False
    identity: dict[str, Any] = field(default_factory=dict[str, Any])  # id, created, model
    filters: list[RoundFilter] = field(default_factory=list[RoundFilter])  # in creation order

    @property
    def stripped_chars(self) -> int:
        return sum(f.stripped_chars for f in self.filters)

    @property
    def first_span(self) -> str:
        return next((f.first_span for f in self.filters if f.first_span), "")

    @property
    def visible(self) -> bool:
        return any(f.visible for f in self.filters)

    def new_filter(self) -> RoundFilter:
        """A fresh filter for one more text of the reply, counted with the others."""
        one = RoundFilter(self.registry)
        self.filters.append(one)
        return one

    @property
    def wants_recovery(self) -> bool:
        """The reply gets the one recovery (G2; never with tool calls, G12)."""
        return (
            self.follows is None
            and self.single_choice
            and needs_recovery(
                stripped_chars=self.stripped_chars,
                visible=self.visible,
                tool_calls=int(self.tool_calls),
            )
        )

    @property
    def malformed(self) -> bool:
        """This is the recovery, and it showed nothing either (G3)."""
        return self.follows is not None and recovery_failed(visible=self.visible)
