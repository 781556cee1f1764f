"""What an upstream reply showed, and what the contract says follows from it. Pure.

`Reply` is the part that every reply guard shares (chat completions' `StreamGuard` and
`CompletionGuard`, Ollama's, the Responses API's and the Messages API's streamed and whole
guards): the reply's filters and the contract's two decisions (`guardrail.reply.
ReplyFilters`: the one recovery, G2, and the recovery that showed nothing, G3), a whole
text through a fresh filter (`whole`), and the reply's identity (id, created, model) taken
from, or given to, its chunks. `WholeReply` is a whole answer's guard, as the routes'
shared whole-answer flow (`guard.http.upstream.GuardedCall`) drives it.

Deliberate choice: a reply keeps at most MAX_TEXTS filters (choices, content parts, text
blocks); one more raises `TooManyTexts`, which the routes turn into their in-band error
(a whole answer's 502). OpenAI caps `n` at 128, so no real reply comes near it, and a
hostile upstream's 10,000 choice indexes cannot make the proxy keep 10,000 filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardrail.policy import RoundFilter
from guardrail.reply import ReplyFilters

IDENTITY = ("id", "created", "model")
MAX_TEXTS = 128
"""The most texts (choices, content parts, text blocks) one reply is filtered for: OpenAI's
own cap on `n`."""


class TooManyTexts(Exception):
    """A reply with more texts than MAX_TEXTS: nothing more of it is filtered."""

    def __init__(self) -> None:
        super().__init__(f"a reply with more than {MAX_TEXTS} choices or parts")


@dataclass
class Reply(ReplyFilters):
    """A reply guard's shared part: the filters and decisions of `ReplyFilters`, and the
    reply's identity taken from, or given to, its chunks."""

    def new_filter(self) -> RoundFilter:
        """A fresh filter for one more text of the reply; TooManyTexts past MAX_TEXTS."""
        if len(self.filters) >= MAX_TEXTS:
            raise TooManyTexts
        return super().new_filter()

    def whole(self, text: str) -> str:
        """What `text` shows as one whole stream, through a fresh filter of the reply's."""
        return self.whole_parts(text)[0]

    def whole_parts(self, text: str) -> tuple[str, str]:
        """What `text` shows as one whole stream, and the reasoning routed out of it."""
        one = self.new_filter()
        shown = one.feed(text) + one.flush()
        return shown, one.take_reasoning()

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
