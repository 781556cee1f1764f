"""never-finishes: a turn with a recovery never ends on the page, in any way.

The page stops reading a turn at its `retry` frame (the guardrail asking the model again)
and leaves it as it is: streaming, no error, the Stop button up. Clean, thinking, slow and
failing turns end as they should, so the preflight passes; every play of a recovery flow
stalls. Its clauses must not be judged: each says, once, that the turn never finished
(neither the done rule nor the error selector fired within the page timeout), and none
claims a leak, NEVER included.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

MODE = "never-finishes"
TIMEOUT_S = 8
"""The run's --turn-timeout: how long a play waits before its turn counts as stalled."""
CAUSE = (
    "the turn never finished: neither the done rule (the message's data-phase set and not"
    f" 'streaming') nor the error selector (`.sp-err`) fired in {TIMEOUT_S} s"
)


class Target(BaseTarget):
    MODE = MODE
    PAGE = render(PageOptions(stall_on_retry=True))


TARGET_PROFILE = PROFILE
