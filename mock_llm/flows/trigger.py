"""Find the trigger `[[mock:FLOW]]` / `[[mock:FLOW#KEY]]` in a chat request's last user message.

Only the last user message counts, so a recovery request that repeats the conversation
(or an agent round that appends tool results) still plays the same turn. A message that
contains the `[[mock:` opener (in any case: `[[MOCK:clean]]` too) but no well-formed
trigger, or two different triggers, is an error rather than "no trigger": silently falling
back to the default flow would make a typo in a test look like an app bug.

The grammar itself (and `strip_triggers`, for an app that searches its users' text) is
`servekit.trigger_grammar`, which the app may import and the mock shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from guardrail.json_shapes import is_array, string_field
from servekit.trigger_grammar import OPENED, OPENER, TRIGGER


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
    opened = OPENED.search(text)
    if opened is not None:
        fragment = text[opened.start() : opened.start() + 60]
        case = "" if opened[0].startswith(OPENER) else " ('mock' is written in lowercase)"
        raise TriggerError(
            f"malformed trigger near {fragment!r}{case}: expected [[mock:FLOW]] or "
            "[[mock:FLOW#KEY]] with FLOW and KEY made of letters, digits, '-' and '_'"
        )
    return None


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
    if is_array(content):
        texts = [text for part in content if (text := string_field(part, "text")) is not None]
        return "\n".join(texts)
    return ""
