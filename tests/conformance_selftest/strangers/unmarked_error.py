"""unmarked-error: the page's error box is not what the profile's error selector names.

The page shows a failed turn's error in `.sp-alert`; the profile says `.sp-err` (a selector
copied from an older version of the page, say). The turn still ends (its `data-phase` is
`finished`), so without the preflight's check G3 would fail as if no error had been shown.

The kit must stop in its preflight, before any clause: a turn whose model failed showed
nothing through the error selector.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

MODE = "unmarked-error"
MESSAGE = (
    "the page has no element matching `.sp-err` with text in a turn whose model failed"
    " (HTTP 500 on every request, flow conformance-preflight-error): fix `selectors.error`"
)
"""The preflight's whole complaint."""


class Target(BaseTarget):
    MODE = MODE
    PAGE = render(PageOptions(error_class="sp-alert"))


TARGET_PROFILE = PROFILE
