"""What an upstream reply showed, and what the contract says follows from it. Pure.

`Reply` is the part that every reply guard shares (chat completions' `StreamGuard` and
`CompletionGuard`, Ollama's and the Responses API's streamed and whole guards): the
reply's identity (id, created, model), whether it carried tool calls, whether it is the
recovery of an earlier reply (`follows`), the filters its texts went through (one per
choice, part or whole text: `new_filter`, `whole`) and their counts summed, and from those
the two decisions of the contract: the one recovery (`wants_recovery`: G2, never with tool
calls, G12; only for a single-choice reply) and the recovery that showed nothing
(`malformed`, G3), both taken from `guardrail.policy`. `WholeReply` is a whole answer's
guard, as the routes' shared whole-answer flow (`guard.upstream.GuardedCall`) drives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guardrail.patterns import Registry
from guardrail.policy import RoundFilter, needs_recovery, recovery_failed

IDENTITY = ("id", "created", "model")


@dataclass
class Reply:
    registry: Registry
    single_choice: bool = True
    follows: Reply | None = None  # the reply this one recovers
    tool_calls: bool = False
    identity: dict[str, Any] = field(default_factory=dict[str, Any])
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

    def whole(self, text: str) -> str:
        """What `text` shows as one whole stream, through a fresh filter of the reply's."""
        one = self.new_filter()
        return one.feed(text) + one.flush()

    @property
    def wants_recovery(self) -> bool:
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
        return self.follows is not None and recovery_failed(visible=self.visible)

    def take_identity(self, message: dict[str, Any]) -> bool:
        """Give a recovery's chunk or completion the first reply's identity (or, for a first
        reply, remember its own); whether `message` changed."""
        if self.follows is None:
            if not self.identity:
                self.identity = {k: message[k] for k in IDENTITY if k in message}
            return False
        self.identity = self.follows.identity
        changed = False
        for key, value in self.identity.items():
            if message.get(key) != value:
                message[key] = value
                changed = True
        return changed


@dataclass
class WholeReply(Reply):
    """A whole (not streamed) answer's guard: `filter` takes the answer (a JSON object) and
    filters its texts in place, and says whether anything in it changed."""

    def filter(self, answer: dict[str, Any], /) -> bool:
        raise NotImplementedError
