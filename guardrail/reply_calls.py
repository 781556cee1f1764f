"""The readers of a whole reply of unmarked calls, as the filter holds them.

Some families write a call with no marker at all, as the whole reply: Llama 3.x as JSON
objects (guardrail/json_reply.py), Llama 3.2 to 4 as a Python list of calls
(guardrail/pythonic_reply.py). `reader_for` gives the filter one reader for the kinds its
registry names; with both, `EitherReply` reads the reply with each and holds it while
either may still be calls.
"""

from __future__ import annotations

from typing import Protocol

from guardrail.json_reply import Reading, ReplyCalls
from guardrail.patterns import Registry
from guardrail.pythonic_reply import PythonicCalls

WHOLE_REPLY_KINDS = ("json_reply", "pythonic_reply")


class CallReply(Protocol):
    """A reader of a reply that may be nothing but calls."""

    @property
    def text(self) -> str: ...

    @property
    def calls(self) -> int: ...

    def feed(self, chunk: str) -> Reading: ...

    def complete(self) -> bool: ...


class EitherReply:
    """One reply read by several readers: "maybe" while any of them may still be calls,
    complete when one is."""

    __slots__ = ("_readers", "text")

    def __init__(self, *readers: CallReply) -> None:
        self._readers = list(readers)
        self.text = ""

    @property
    def calls(self) -> int:
        return max((r.calls for r in self._readers if r.complete()), default=0)

    def feed(self, chunk: str) -> Reading:
        self.text += chunk
        self._readers = [r for r in self._readers if r.feed(chunk) == "maybe"]
        return "maybe" if self._readers else "no"

    def complete(self) -> bool:
        return any(r.complete() for r in self._readers)


def reader_for(registry: Registry) -> CallReply | None:
    """The reader for the whole-reply kinds `registry` has (None: it has none)."""
    kinds = {p.kind for p in registry}
    readers: list[CallReply] = []
    if "json_reply" in kinds:
        readers.append(ReplyCalls())
    if "pythonic_reply" in kinds:
        readers.append(PythonicCalls())
    if len(readers) > 1:
        return EitherReply(*readers)
    return readers[0] if readers else None
