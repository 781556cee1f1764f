"""When a turn has finished, and the error it showed.

Deliberate choices:
- Every wait is bounded by the page timeout and fails with what it was waiting for.
- A turn has finished when the profile's done rule fires or the turn's error shows,
  whichever comes first: a page may leave its streaming signs (a Stop button, a typing
  indicator) up after an error, and the error is the end of that turn all the same. It
  is looked for every POLL_MS, as the done rule is, since a profile's selectors may be
  Playwright's own (`:has-text()`, `>>`), which no script in the page can evaluate.
- An error outside every message that already showed, with the same text, when the
  question was sent (a banner an earlier turn left up) is not the turn's.
- The turn's error is read in at most three calls, no element handles: the errors, the
  turn's message and every message are each resolved by Playwright (`evaluate_all`, so a
  profile's selectors keep Playwright's syntax) and kept in the page between the calls. A
  look with handles cost about thirty protocol messages, and it is taken every POLL_MS.
"""

from __future__ import annotations

import time

from playwright.sync_api import Locator, Page

from conformance.browser.scripts import script
from conformance.profiles.model import DoneRule, Profile, Selectors

MARK_ERRORS_JS = script("mark_errors")
ERROR_LOOK_JS = script("error_look")
MESSAGE_LOOK_JS = script("message_look")
TURN_ERROR_JS = script("turn_error")
QUIET_JS = script("recorder_quiet")
POLL_MS = 100
"""How often a turn's end (its done rule, its error) is looked for while it streams."""
READS_PER_VIEW = 10


class TurnNeverFinished(AssertionError):
    """Neither the profile's done rule nor the error selector fired within the page timeout."""


def mark_errors(page: Page, selectors: Selectors) -> None:
    """Remember the errors the page shows as the question is sent, with their text: one
    still showing unchanged later is not the new turn's."""
    page.locator(selectors.error).evaluate_all(MARK_ERRORS_JS)


def wait_finished(page: Page, profile: Profile, message: Locator, timeout_ms: float) -> str:
    """Wait until the turn of `message` has finished: by the profile's done rule, or
    its error showing (inside the message, or on the page outside every message).

    The done rules: `attribute`: the message's attribute is set and no longer the
    streaming value. `appears`: the selector shows inside the turn's message (an earlier
    answer's copy button must not end this turn). `disappears`: the selector (anywhere on
    the page, a typing indicator often sits outside the message) is hidden and the DOM
    has been quiet for `quiet_ms`, so an indicator that has not shown yet does not end
    the turn. Otherwise: the DOM quiet for `quiet_ms`. TurnNeverFinished when neither
    the rule nor the error fires within the page timeout. The message is looked up
    again at every look (a page that replaces its nodes as it streams leaves no old
    element to watch). Returns the error that ended the turn ('' for the done rule): a
    toast may be gone by the time the turn is read.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    while not done_now(page, profile.done, message):
        error = error_of(page, profile.selectors, message)
        if error:
            return error
        if time.monotonic() >= deadline:
            raise TurnNeverFinished(
                f"the turn never finished: neither the done rule ({done_rule_text(profile.done)})"
                f" nor the error selector (`{profile.selectors.error}`) fired in"
                f" {timeout_ms / 1000:g} s"
            )
        page.wait_for_timeout(POLL_MS)
    return ""


def done_rule_text(rule: DoneRule) -> str:
    """The done rule in words, for a message."""
    if rule.attribute is not None:
        return f"the message's {rule.attribute} set and not {rule.streaming_value!r}"
    if rule.appears is not None:
        return f"`{rule.appears}` showing in the message"
    if rule.disappears is not None:
        return f"`{rule.disappears}` hidden, then {rule.quiet_ms} ms without a DOM change"
    return f"{rule.quiet_ms} ms without a DOM change"


def done_now(page: Page, rule: DoneRule, message: Locator) -> bool:
    """Whether the done rule holds for `message` now."""
    if rule.attribute is not None:
        value = message.get_attribute(rule.attribute)
        return value is not None and value != rule.streaming_value
    if rule.appears is not None:
        return message.locator(rule.appears).first.is_visible()
    if rule.disappears is not None and page.locator(rule.disappears).last.is_visible():
        return False
    quiet: bool = page.evaluate(QUIET_JS, rule.quiet_ms)
    return quiet


def error_of(page: Page, selectors: Selectors, message: Locator | None) -> str:
    """The visible error text of this turn: inside its message, or on the page outside
    every message (an earlier answer's error is not this turn's).

    Read again when the page redrew between the kit's looks at errors and messages
    (an element of one look detached in the next), at most READS_PER_VIEW times."""
    for attempt in range(READS_PER_VIEW):
        if not page.locator(selectors.error).evaluate_all(ERROR_LOOK_JS):
            return ""
        if message is not None:
            message.evaluate_all(MESSAGE_LOOK_JS)
        strict = attempt < READS_PER_VIEW - 1
        shown: str | None = page.locator(selectors.message).evaluate_all(TURN_ERROR_JS, strict)
        if shown is not None:
            return shown
    return ""
