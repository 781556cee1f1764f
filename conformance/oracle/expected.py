"""A flow's expected outcome, as the flow itself states it in the mock (its `expect` block).

The kit never uses a guardrail implementation as its oracle: what a turn must show, how
many upstream requests it makes, whether one recovery is due and how many characters of
markup it strips come from the flow. A family flow's outcome depends on the model the app
asks for: its markup is stripped for a model of a family that writes it, and is text
(`elsewhere`) for the others. Which family a model name names is the mock's table
(mock_llm/flows/families.py), never the guard's.
"""

from __future__ import annotations

from dataclasses import dataclass

from mock_llm.client import Expect, outcome_for


@dataclass(frozen=True)
class Expected:
    """A flow's expected outcome as the flow states it, with the canary its markup carries.

    A family flow's `expect` holds for a model of its `family` or of `written_by`;
    `by_family` says what other named families' models show; `elsewhere`, when the flow
    states one, holds for every other model (its markup is then a look-alike)."""

    expect: Expect
    canary: str | None
    family: str | None = None
    elsewhere: Expect | None = None
    written_by: tuple[str, ...] = ()
    by_family: tuple[tuple[str, Expect], ...] = ()

    def strips_for(self, model: object) -> bool:
        """Whether the flow's `expect` (its markup stripped) holds for `model`: always, but
        for a family flow with an `elsewhere` outcome and a model of no family that writes
        its markup (the markup is then text for it, in whole or, `by_family`, in part)."""
        return self._outcome(model) is self.expect

    def for_model(self, model: object) -> Expected:
        """The outcome for an app whose requests name `model`: `elsewhere` shows the markup
        and its canary whole; a `by_family` outcome keeps the canary where it hides it."""
        want = self._outcome(model)
        if want is None or want is self.expect:
            return self
        if want is self.elsewhere:
            return Expected(want, None)
        hidden = self.canary is not None and self.canary not in want.shown
        return Expected(want, self.canary if hidden else None)

    def _outcome(self, model: object) -> Expect | None:
        writers = (self.family, *self.written_by) if self.family else ()
        return outcome_for(model, self.expect, self.elsewhere, writers, self.by_family)

    @property
    def shown(self) -> str:
        return self.expect.shown

    @property
    def recovery(self) -> bool:
        return self.expect.recovery

    @property
    def stripped_chars(self) -> int:
        return self.expect.stripped_chars

    @property
    def error(self) -> bool:
        return self.expect.error is not None

    @property
    def requests(self) -> int:
        return self.expect.requests
