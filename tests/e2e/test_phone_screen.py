"""What a phone (390x844) shows: the demo's examples, a restored conversation, a past
question, a length notice, each usable and within the screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import SIZES
from .page_driver import ASSISTANT, answered

BACKUPS = "When do backups run?"


@pytest.fixture
def phone(chat: Page) -> Page:
    chat.set_viewport_size(SIZES["phone"])
    return chat


def test_on_a_phone_every_demo_example_can_be_reached_and_played(phone: Page):
    buttons = phone.get_by_test_id("demo-example")
    expect(buttons).to_have_count(8)
    last = buttons.last  # off screen in the sideways row until scrolled to
    last.scroll_into_view_if_needed()
    expect(last).to_be_in_viewport()
    last.click()
    message = phone.locator(ASSISTANT).first
    expect(message).to_have_attribute("data-state", "done")
    expect(message.get_by_test_id("turn-journal")).to_be_visible()
    expect(message.get_by_test_id("answer")).to_be_in_viewport(ratio=0.5)


def test_on_a_phone_a_reload_restores_the_conversation_and_a_past_question_opens(
    phone: Page, key: str
):
    question = f"{BACKUPS} [[mock:length#{key}]]"
    answered(phone, question)
    phone.reload()

    restored = phone.locator(ASSISTANT).first
    expect(restored.get_by_test_id("answer-cut")).to_be_in_viewport()
    phone.get_by_test_id("history-toggle").click()
    phone.get_by_test_id("history").get_by_role("button", name=question).click()
    dialog = phone.get_by_test_id("past-turn")
    expect(dialog.get_by_test_id("answer-cut")).to_be_visible()
    width = dialog.evaluate("d => d.getBoundingClientRect().right")
    assert width <= SIZES["phone"]["width"]
