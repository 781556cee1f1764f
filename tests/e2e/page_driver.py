"""Drive the chat page the way a person does: type, press Enter, wait for the answer."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

ASSISTANT = "[data-testid=message-assistant]"


def wait_ready(page: Page) -> None:
    """Wait until the page takes a new question: the send button is enabled again."""
    expect(page.locator("[data-testid=chat-send]")).to_be_enabled()


def ask(page: Page, question: str) -> Locator:
    """Type a question, press Enter; the new assistant message.

    Waits for the send button first: a turn's message reads `done` a moment before the page
    is ready for the next question, and Enter in that moment is ignored (the CI failure of
    test_a_hostile_payload_stays_inert[tool-result-css-inject], whose question stayed in the
    composer)."""
    wait_ready(page)
    page.fill("[data-testid=chat-input]", question)  # waits until the box is enabled
    before = page.locator(ASSISTANT).count()  # so restored turns are counted
    page.keyboard.press("Enter")
    message = page.locator(ASSISTANT).nth(before)
    expect(message).to_be_attached()
    return message


def answered(page: Page, question: str) -> Locator:
    """Ask and wait until the answer is complete."""
    message = ask(page, question)
    expect(message).to_have_attribute("data-state", "done")
    return message


def settled(page: Page, question: str) -> Locator:
    """Ask and wait until the turn has ended, whether done or in an error."""
    message = ask(page, question)
    expect(message).to_have_attribute("data-state", re.compile(r"^(done|error)$"))
    return message
