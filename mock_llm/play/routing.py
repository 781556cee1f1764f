"""Which flow a chat request plays, under which KEY, and whether it is a side call. Pure.

The order is the point: a request is classified as a side call first (`side_calls.py`),
before its trigger is read. A side call's text may quote a whole chat, with a malformed
trigger or two different ones in it; that is not the side call's error, so it never
reaches `find_trigger`. Every other request is routed by its last user message's trigger,
and a malformed or ambiguous trigger there is an error (TriggerError), as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mock_llm.flows.catalog import DEFAULT_FLOW
from mock_llm.flows.trigger import find_trigger, last_user_text
from mock_llm.play.side_calls import SIDE_CALL_FLOW, SideCallRules, side_call_key


@dataclass(frozen=True)
class Destination:
    """Where a request goes: the flow, its turn's KEY, and the text naming a keyless turn.

    A side call (`side_call`) belongs to no turn: it never advances one, and `key` is only
    there so that a reader finds it under the turn it was made for.
    """

    flow: str
    key: str | None
    side_call: bool = False
    turn_text: str = ""


def route_request(messages: Sequence[Mapping[str, Any]], rules: SideCallRules) -> Destination:
    """The route of a chat request; TriggerError for a bad trigger in a turn's request."""
    if rules.matches(messages):
        return Destination(SIDE_CALL_FLOW, side_call_key(messages), side_call=True)
    text = last_user_text(messages)
    trigger = find_trigger(text)
    if trigger is None:
        return Destination(DEFAULT_FLOW, None, turn_text=text)
    return Destination(trigger.flow, trigger.key, turn_text=text)
