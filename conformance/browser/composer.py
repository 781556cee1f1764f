"""The composer: where a question is typed, how it is sent, and what it still holds.

Deliberate choices:
- A turn whose message never shows while the composer still holds the question is
  `QuestionNotSent` (the page ignored Enter or the click: not ready yet), never a timeout:
  the message says which set-up step would wait for the page.
"""

from __future__ import annotations

from playwright.sync_api import Locator, Page

from conformance.browser.scripts import script
from conformance.profiles.model import Profile

COMPOSER_TEXT_JS = script("composer_text")


class QuestionNotSent(AssertionError):
    """The question never left the composer: the page ignored Enter (or the click)."""


def composer(page: Page, profile: Profile) -> Locator:
    """The profile's text box: a textarea, an input or a contenteditable editor."""
    return page.locator(profile.selectors.input).first


def type_question(page: Page, profile: Profile, question: str) -> Locator:
    """Put `question` in the composer (focusing it first; Playwright waits until it is
    enabled); the composer."""
    box = composer(page, profile)
    box.fill(question)
    return box


def send_typed(page: Page, profile: Profile, box: Locator) -> None:
    """Send what the composer holds: Enter in it, or a click on the send control."""
    if profile.send_with == "enter":
        box.press("Enter")
    else:
        page.locator(profile.selectors.send).first.click()


def held_text(box: Locator) -> tuple[str, bool]:
    """What the composer holds, and whether it is a form control (one a page can disable)."""
    held, control = box.evaluate(COMPOSER_TEXT_JS)
    return str(held), bool(control)


def unsent(page: Page, profile: Profile, needle: str, waited: str) -> QuestionNotSent | None:
    """QuestionNotSent when the composer still holds `needle` (the question's KEY, or the
    question) after the kit waited `waited` for the turn's message; None when it does not."""
    selectors = profile.selectors
    box = composer(page, profile)
    held, control = held_text(box) if box.count() else ("", False)
    if needle not in held:
        return None
    how = "pressed Enter in it" if profile.send_with == "enter" else f"clicked {selectors.send}"
    enabled = f'"{selectors.input}:enabled" if the page enables it then, or ' if control else ""
    return QuestionNotSent(
        f"the question is still in the composer ({selectors.input}): it was never sent"
        f" (the kit {how} and waited {waited}). A page that takes text before its"
        " session is ready ignores it: add a [[setup]] step that waits until the page"
        f" is ready, wait_for = {enabled}a selector of what the page shows once ready"
        ' (docs/conformance.md, "A page that is not ready at once")'
    )
