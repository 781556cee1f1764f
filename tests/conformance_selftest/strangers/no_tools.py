"""no-tools: an app that offers the model no tools, run with a profile that declares them.

Its page has every part; its model requests carry no `tools`. The profile declares `tools`
(as the default profile does), so without the preflight's check G12 and G14 would judge a
tool round the app can never have (G14: "the round's real tool call was never answered").

The kit must stop in its preflight, before any clause, naming the key: the wiring turn's
request in the mock's journal carried no `tools`.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

MODE = "no-tools"
MESSAGE = (
    "the profile declares `capabilities.tools`, but the app offered the model no tools in a"
    " clean turn (its request carried no `tools`): declare `capabilities.tools = false`, or"
    " turn the app's tools on"
)
"""The preflight's whole complaint."""


class Target(BaseTarget):
    MODE = MODE
    PAGE = render(PageOptions())
    OFFERS_TOOLS = False


TARGET_PROFILE = PROFILE
