"""no-thinking: a page with no reasoning display, run with a profile that declares one.

The model's thinking reaches the page in `thinking` frames, and the page drops them: no
element matches `details.sp-think`. The profile declares `thinking` (as the default profile
does), so without the preflight's check G9 would fail as if the thinking had been filtered.

The kit must stop in its preflight, before any clause, naming the selector and the key.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

MODE = "no-thinking"
MESSAGE = (
    "the page has no element matching `details.sp-think` with text in a turn whose model"
    " thought (flow thinking): declare `capabilities.thinking = false` or fix"
    " `selectors.thinking`"
)
"""The preflight's whole complaint."""


class Target(BaseTarget):
    MODE = MODE
    PAGE = render(PageOptions(thinking=False))


TARGET_PROFILE = PROFILE
