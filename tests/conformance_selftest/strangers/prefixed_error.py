"""prefixed-error: the page puts the exception's class name before the error copy.

As a framework's own error display does: "RuntimeError: The model returned a malformed
reply — please try again." No selector can cut the prefix off; the profile says how the
copy is matched instead (`[error_text] match = "contains"`). Its guardrail is `good`'s, so
G3 must pass.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .parts_page import PROFILE, PageOptions, render

MODE = "prefixed-error"
PREFIX = "RuntimeError: "


class Target(BaseTarget):
    MODE = MODE
    PAGE = render(PageOptions(error_prefix=PREFIX))


TARGET_PROFILE = PROFILE + '\n[error_text]\nmatch = "contains"\n'
