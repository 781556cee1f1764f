"""Which assistant message is a turn's, found again at every look (`[turn] find`).

Deliberate choices:
- The turn's message is found by the question's KEY, not by a count (default
  `after-question`: the first assistant message after the place the page shows the KEY, in
  document order across open shadow roots; counting only where the page shows the KEY
  nowhere): a page that redraws its conversation and drops a failed turn gives the next
  answer the failed one's place. The rule runs in the page (js/find_turn.js) over the
  messages Playwright's selector found, so a profile's selectors keep Playwright's syntax.
- No element is held across a turn: the message is found again by the rule at each step,
  and waited on through locators, which Playwright resolves afresh at every look (a page
  that replaces its nodes while it streams leaves the first element detached).
- The wait for the message also ends at the turn's error outside every message (a toast,
  a banner): a page may answer a failed turn with that alone and never add a message
  (Gradio's `gr.Error`). The error is kept with the look, since a toast may go away soon.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import ElementHandle, Page
from playwright.sync_api import Error as PlaywrightError

from conformance.browser.scripts import script
from conformance.profiles.model import Profile, TurnFind

MARK_SHOWN_JS = script("mark_shown")
FIND_TURN_JS = script("find_turn")
NEXT_CHANGE_JS = script("next_change")
KEY_IN_QUESTION = re.compile(r"\[\[mock:[^\]#]*#([^\]]+)\]\]")
"""The KEY of the question's `[[mock:FLOW#KEY]]` trigger: the turn's name on the page too."""
LOOK_AGAIN_MS = 100
"""The longest the kit waits for a DOM change before it looks for the turn's message again
(a change it cannot observe, in a closed shadow root, is still seen that late)."""


class NoTurnMessage(AssertionError):
    """The question was sent, but no assistant message of its turn showed."""


@dataclass(frozen=True)
class TurnQuery:
    """What finds one turn's message again, whatever the page redrew meanwhile."""

    find: TurnFind
    message: str
    user_message: str | None
    key: str | None
    question: str
    before: int  # messages shown before the question was sent


@dataclass(frozen=True)
class Found:
    index: int
    count: int
    shown: bool
    error: str = ""  # the turn's error outside every message, when it came with no message

    @property
    def found(self) -> bool:
        return self.index >= 0


def query_for(page: Page, profile: Profile, question: str) -> TurnQuery:
    """The query for the turn `question` starts, once the composer took it: the messages
    shown now are counted and remembered (`last`: a message not among them)."""
    selectors = profile.selectors
    before: int = page.locator(selectors.message).evaluate_all(MARK_SHOWN_JS)
    key = KEY_IN_QUESTION.search(question)
    return TurnQuery(
        find=profile.turn_find,
        message=selectors.message,
        user_message=selectors.user_message,
        key=key[1] if key else None,
        question=question,
        before=before,
    )


def find(page: Page, turn: TurnQuery) -> Found:
    """The turn's message by the profile's rule, on the page as it is now."""
    users: list[ElementHandle] = []
    if turn.find == "after-question" and turn.user_message is not None and turn.key:
        users = page.locator(turn.user_message).element_handles()
    try:
        found: dict[str, Any] = page.locator(turn.message).evaluate_all(
            FIND_TURN_JS,
            {"find": turn.find, "key": turn.key, "before": turn.before,
             "users": users if turn.user_message is not None else None},
        )  # fmt: skip
    finally:
        for handle in users:
            handle.dispose()
    return Found(int(found["index"]), found["count"], found["shown"])


def await_message(
    page: Page, turn: TurnQuery, timeout_ms: float, outside_error: Callable[[], str]
) -> Found:
    """Wait until the turn's message shows, or `outside_error()` (the turn's error outside
    every message) has text, looking again at every DOM change; the look that found either,
    or the last one once `timeout_ms` has passed."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            found = find(page, turn)
            if found.found or time.monotonic() >= deadline:
                return found
            error = outside_error()
            if error:  # the message may have come with it since: looked for once more
                found = find(page, turn)
                return found if found.found else Found(-1, found.count, found.shown, error)
            page.evaluate(NEXT_CHANGE_JS, LOOK_AGAIN_MS)
        except PlaywrightError as exc:  # a page that navigates as it sends: look again
            if "navigat" not in str(exc) or time.monotonic() >= deadline:
                raise


def no_message(turn: TurnQuery, found: Found, waited: str) -> NoTurnMessage:
    """Why no message of the turn showed within `waited`: which rule found nothing."""
    counted = f"{turn.before} before the question, {found.count} now"
    if turn.find == "count":
        why = f'{counted}; [turn] find = "count"'
    elif turn.find == "last":
        why = '[turn] find = "last": the last message, once the page did not show it before'
    elif found.shown:
        return NoTurnMessage(
            f"the page shows the question, but no assistant message ({turn.message})"
            f" followed it within {waited}"
        )
    elif turn.user_message is not None:
        why = f"no user message ({turn.user_message}) shows the question's KEY {turn.key}"
        why += f", so the kit counted messages: {counted}"
    else:
        why = f"the page shows the question's KEY {turn.key} nowhere outside the composer"
        why += f", so the kit counted messages: {counted}"
    return NoTurnMessage(
        f"no new assistant message ({turn.message}) showed within {waited} ({why})"
    )
