"""eager-profiles: every family's markup stripped whatever the model (an over-eager filter).

The filter strips with every profile there is (`--profiles all`) instead of the ones the
model's name asks for: the target's model is LFM2, for which Qwen's `<tool_call>`, Gemma's
`call:f{...}` or MiniMax's `<minimax:tool_call>` are look-alikes a user may well be shown
(an answer about another model's format). Text of that shape is swallowed, and a reply
that was only such text gets a recovery it should not. LFM2's own markup and every
special token are stripped as `good` strips them.

Must fail: G15 (another family's markup is swallowed), and nothing else: G13 still holds,
since a filter that strips everything also strips each family's own shape.
"""

from __future__ import annotations

from guardrail.model_profiles import parse_profiles
from guardrail.scaffolding import ScaffoldingFilter

from .base import MODEL, BaseTarget, TextFilter

MODE = "eager-profiles"
BREAKS = ("G15",)
ALSO_FAILS: tuple[str, ...] = ()

EVERY_PROFILE = parse_profiles("all").registry(MODEL)


class Target(BaseTarget):
    MODE = MODE

    def new_filter(self) -> TextFilter:
        return ScaffoldingFilter(EVERY_PROFILE)  # the bug: not the model's own profiles
