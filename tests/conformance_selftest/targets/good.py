"""good: a correct guardrail, the control. The kit must pass it on every clause.

Every request's answer text goes through a fresh guardrail.scaffolding.ScaffoldingFilter,
thinking is shown raw, a scaffold-only answer gets exactly one recovery
(guardrail.policy.with_correction, no tools), an empty recovery ends with the
malformed-reply error frame, Stop closes the upstream stream, and the log line's
scaffold_stripped is the sum over the turn's requests: all of it is targets.base as it is.
"""

from __future__ import annotations

from .base import BaseTarget

MODE = "good"
BREAKS: tuple[str, ...] = ()
ALSO_FAILS: tuple[str, ...] = ()


class Target(BaseTarget):
    MODE = MODE
