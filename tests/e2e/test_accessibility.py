"""The page works from the keyboard alone, its controls are labelled, answers announced once."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .page_driver import ASSISTANT


def test_every_control_has_an_accessible_name(chat: Page):
    expect(chat.get_by_role("textbox", name="Your question")).to_be_visible()
    expect(chat.get_by_role("button", name="Send")).to_be_visible()
    expect(chat.get_by_role("button", name="Stop")).to_be_disabled()


def test_a_question_can_be_asked_from_the_keyboard_alone(chat: Page, key: str):
    chat.locator("body").focus()
    chat.keyboard.press("Tab")  # the skip link
    chat.keyboard.press("Enter")
    expect(chat.get_by_test_id("chat-input")).to_be_focused()
    chat.keyboard.type(f"When do backups run? [[mock:clean#{key}]]")
    chat.keyboard.press("Enter")
    expect(chat.locator(ASSISTANT)).to_have_attribute("data-state", "done")
    expect(chat.get_by_test_id("chat-input")).to_be_focused()


def test_an_answer_is_announced_once_not_per_chunk(chat: Page, key: str):
    chat.evaluate(
        """() => {
            window.__announcements = [];
            const region = document.querySelector('[data-testid=announcer]');
            new MutationObserver(() => window.__announcements.push(region.textContent))
                .observe(region, {childList: true, characterData: true, subtree: true});
        }"""
    )
    chat.fill("[data-testid=chat-input]", f"When do backups run? [[mock:clean#{key}]]")
    chat.keyboard.press("Enter")
    expect(chat.locator(ASSISTANT)).to_have_attribute("data-state", "done")
    announcements = chat.evaluate("window.__announcements")
    assert len(announcements) == 1
    assert announcements[0].startswith("Answer:")
