"""no-stop-control: a page with no Stop button, run with a profile that declares one.

A turn streams to its end and nothing can cut it short; the profile declares `stop` (as
the default profile does), so without the preflight's check G11 would wait a whole page
timeout for a control that does not exist.

The kit must stop in its preflight, before any clause, naming the selector, the wait and
the key.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

MODE = "no-stop-control"
TIMEOUT_S = 8
"""The run's --turn-timeout: the preflight waits that long for the control."""
MESSAGE = (
    f"the page has no element matching `button.sp-stop` that could be clicked within"
    f" {TIMEOUT_S} s while a slow answer streamed (flow slow): declare"
    " `capabilities.stop = false` or fix `selectors.stop`"
)
"""The preflight's whole complaint."""


class Target(BaseTarget):
    MODE = MODE
    PAGE = render(PageOptions(stop=False))


TARGET_PROFILE = PROFILE
