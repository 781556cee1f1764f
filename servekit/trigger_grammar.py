"""The mock's trigger grammar, `[[mock:FLOW]]` and `[[mock:FLOW#KEY]]`. Pure.

`TRIGGER` is a well-formed trigger; `OPENED` anything that starts like one, up to the next
`]]` on its line or else the next whitespace (so an unclosed trigger does not swallow the
question); `strip_triggers` replaces each with a space.

Deliberate choices:
- It lives in the neutral package, not the mock: the notes app strips triggers before
  searching (their words would pull a question under the grounding threshold, so tests
  would see other modes than users do), whatever model it is pointed at, and may not
  import the mock; one grammar cannot disagree with itself.
"""

from __future__ import annotations

import re

__all__ = ["OPENED", "OPENER", "TRIGGER", "strip_triggers"]

OPENER = "[[mock:"
TRIGGER = re.compile(r"\[\[mock:(?P<flow>[A-Za-z0-9_-]+)(?:#(?P<key>[A-Za-z0-9_-]+))?\]\]")
OPENED = re.compile(re.escape(OPENER) + r"(?:[^\n]*?\]\]|\S*)", re.IGNORECASE)


def strip_triggers(text: str) -> str:
    """`text` with each trigger, well-formed or not and in any case, replaced by a space.

    A trigger here is anything that starts with `[[mock:`; it runs to the next `]]` on the
    same line, or to the next whitespace when that line has no `]]`. Other double brackets
    (`[[backups]]`) stay.
    """
    return OPENED.sub(" ", text)
