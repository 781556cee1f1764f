"""The mock's trigger grammar, `[[mock:FLOW]]` and `[[mock:FLOW#KEY]]`. Pure.

Two sides read it: the mock, which plays the flow a chat request's trigger names
(mock_llm.flows.trigger), and an app that searches its users' text, which must never search a
trigger's words (the notes app's retrieval: they would count as words the notes never
use and pull a question under the grounding threshold, so tests and the conformance kit
would see other modes than users do). The grammar lives here, in the neutral package,
rather than in the mock or behind a cleaner the demo injects: the app strips triggers
whatever model it is pointed at (the kit points a configured app at a standalone mock),
it may not import the mock, and one grammar cannot disagree with itself.

- `TRIGGER`: a well-formed trigger (FLOW and KEY are letters, digits, `-` and `_`).
- `OPENED`: anything that starts like one (`[[mock:` in any case) up to the next `]]` on
  its line, or up to the next whitespace when there is none, so an unclosed trigger does
  not swallow the question after it. Every match of TRIGGER is a match of it.
- `strip_triggers`: a text with each of those replaced by a space.
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
