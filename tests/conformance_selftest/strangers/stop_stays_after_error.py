"""stop-stays-after-error: a turn that ends in the error state leaves the Stop button up.

The page hides its Stop button when a turn ends done, and its profile says so
(`[done] disappears = "button.sp-stop"`); after an error it forgets to, until the next turn
ends. Its guardrail is `good`'s: G3's turn ends with the malformed-reply error shown in
`.sp-err`. The done rule never fires on that turn, the error selector does: the turn must
count as finished, G3 and NEVER must pass on it, and the preflight's own failing turn too.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

MODE = "stop-stays-after-error"


class Target(BaseTarget):
    MODE = MODE
    PAGE = render(PageOptions(stop_stays_on_error=True))


TARGET_PROFILE = PROFILE.replace(
    'attribute = "data-phase"', 'attribute = ""\ndisappears = "button.sp-stop"\nquiet_ms = 800'
)
