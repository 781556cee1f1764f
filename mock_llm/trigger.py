"""Find the trigger `[[mock:FLOW]]` / `[[mock:FLOW#KEY]]` in a chat request's last user message.

Only the last user message counts, so a recovery request that repeats the conversation
(or an agent round that appends tool results) still plays the same turn. A message that
contains the `[[mock:` opener (in any case: `[[MOCK:clean]]` too) but no well-formed
trigger, or two different triggers, is an error rather than "no trigger": silently falling
back to the default flow would make a typo in a test look like an app bug.

`strip_triggers` is for the other side, an app that searches the user's text: it removes
anything that looks like a trigger, well-formed or not and in any case, so the words of a
trigger never reach a search.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

OPENER = "[[mock:"
TRIGGER = re.compile(r"\[\[mock:(?P<flow>[A-Za-z0-9_-]+)(?:#(?P<key>[A-Za-z0-9_-]+))?\]\]")
# The opener in any case, up to the next `]]` on its line, or up to the next whitespace when
# there is none (so an unclosed trigger does not swallow the question after it). Every
# match of TRIGGER is a match of this.
_OPENED = re.compile(re.escape(OPENER) + r"(?:[^\n]*?\]\]|\S*)", re.IGNORECASE)


class TriggerError(ValueError):
    """The last user message holds a malformed or ambiguous trigger."""


@dataclass(frozen=True)
class Trigger:
    flow: str
    key: str | None


def find_trigger(text: str) -> Trigger | None:
    """The trigger in `text`, None when there is none; TriggerError when it is malformed."""
    matches = list(TRIGGER.finditer(text))
    distinct = {(m["flow"], m["key"]) for m in matches}
    if len(distinct) > 1:
        found = ", ".join(sorted(m[0] for m in matches))
        raise TriggerError(f"the last user message holds more than one trigger: {found}")
    if matches:
        return Trigger(matches[0]["flow"], matches[0]["key"])
    opened = _OPENED.search(text)
    if opened is not None:
        fragment = text[opened.start() : opened.start() + 60]
        case = "" if opened[0].startswith(OPENER) else " ('mock' is written in lowercase)"
        raise TriggerError(
            f"malformed trigger near {fragment!r}{case}: expected [[mock:FLOW]] or "
            "[[mock:FLOW#KEY]] with FLOW and KEY made of letters, digits, '-' and '_'"
        )
    return None


def strip_triggers(text: str) -> str:
    """`text` with each trigger, well-formed or not and in any case, replaced by a space.

    A trigger here is anything that starts with `[[mock:`; it runs to the next `]]` on the
    same line, or to the next whitespace when that line has no `]]`. Other double brackets
    (`[[backups]]`) stay.
    """
    return _OPENED.sub(" ", text)


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last message whose role is `user` ('' when there is none).

    Content may be a string or a list of parts; the text parts are joined.
    """
    for message in reversed(messages):
        if message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def message_text(content: object) -> str:
    """The text of a message's content, whether a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in cast(list[object], content):
            if isinstance(part, dict):
                text = cast(dict[str, object], part).get("text")
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts)
    return ""
