"""A flow's expected outcome, as the flow itself states it in the mock (its `expect` block).

The kit never uses a guardrail implementation as its oracle: what a turn must show, how
many upstream requests it makes, whether one recovery is due and how many characters of
markup it strips come from the flow. A family flow's outcome depends on the model the app
asks for: its markup is stripped for a model of its family, and is text (`elsewhere`) for
the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from mock_llm.client import Expect, family_covered


@dataclass(frozen=True)
class Expected:
    """A flow's expected outcome as the flow states it, with the canary its markup carries.

    A family flow's `expect` holds for a model of its `family`; `elsewhere`, when the flow
    states one, for every other model (its markup is then a look-alike)."""

    expect: Expect
    canary: str | None
    family: str | None = None
    elsewhere: Expect | None = None

    def strips_for(self, model: object) -> bool:
        """Whether the flow's `expect` (its markup stripped) holds for `model`: always, but
        for a family flow with an `elsewhere` outcome and a model whose profiles under
        `--profiles auto` do not cover the family's markup."""
        return self.family is None or self.elsewhere is None or family_covered(self.family, model)

    def for_model(self, model: object) -> Expected:
        """The outcome for an app whose requests name `model`."""
        if self.strips_for(model) or self.elsewhere is None:
            return self
        return Expected(self.elsewhere, None)

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
