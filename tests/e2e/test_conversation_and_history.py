"""The conversation survives a reload, and a past question opens with its answer."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from .conftest import TIMEOUT_MS, Shots
from .page_driver import ASSISTANT, answered, ask

BACKUPS = "When do backups run?"


def test_a_reload_brings_this_tabs_conversation_back_in_order_and_a_new_question_comes_below(
    chat: Page, key: str
):
    answered(chat, f"{BACKUPS} [[mock:clean#{key}a]]")
    answered(chat, f"Which notes mention restic? [[mock:read-dns#{key}b]]")

    chat.reload()

    messages = chat.locator(ASSISTANT)
    expect(messages).to_have_count(2)
    expect(messages.nth(0).get_by_test_id("answer")).to_contain_text("Backups run nightly")
    expect(messages.nth(0).get_by_test_id("sources")).to_contain_text("/homelab/backups.md")
    expect(messages.nth(1).get_by_test_id("tool-call")).to_have_text("read /homelab/dns.md")
    expect(messages.nth(1)).to_have_attribute("data-state", "done")
    expect(chat.get_by_test_id("message-user").nth(1)).to_contain_text("restic")

    latest = answered(chat, f"{BACKUPS} [[mock:thinking#{key}c]]")

    expect(messages, "the new question's answer after the restored two").to_have_count(3)
    expect(latest.get_by_test_id("thinking")).to_be_visible()
    expect(messages.last.get_by_test_id("thinking")).to_be_visible()


def test_another_tab_starts_an_empty_conversation(chat: Page, browser: Browser, key: str):
    answered(chat, f"{BACKUPS} [[mock:clean#{key}]]")
    other = chat.context.new_page()
    other.set_default_timeout(TIMEOUT_MS)
    other.goto(chat.url)
    expect(other.get_by_test_id("history")).to_contain_text(key)  # the list is shared
    expect(other.locator(ASSISTANT)).to_have_count(0)
    other.close()


def test_a_past_question_opens_with_its_turn_closes_with_escape_and_can_be_asked_again(
    chat: Page, key: str
):
    question = f"How is DNS set up for the local zone? [[mock:read-dns#{key}]]"
    answered(chat, question)
    item = chat.get_by_test_id("history").get_by_role("button", name=question)

    item.click()

    dialog = chat.get_by_test_id("past-turn")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_test_id("past-turn-question")).to_have_text(question)
    expect(dialog.get_by_test_id("answer")).to_have_text("The local zone is served by unbound.")
    expect(dialog.get_by_test_id("tool-call")).to_have_text("read /homelab/dns.md")
    expect(dialog.get_by_test_id("sources")).to_contain_text("/homelab/dns.md")
    expect(dialog.get_by_test_id("past-turn-when")).to_contain_text("Asked ")
    expect(chat.locator(ASSISTANT)).to_have_count(1)  # the dialog's copy is not an answer

    chat.keyboard.press("Escape")
    expect(dialog, "the dialog after Escape").to_be_hidden()
    item.click()
    chat.get_by_test_id("past-turn-ask-again").click()

    expect(dialog, "the dialog after Ask it again").to_be_hidden()
    expect(chat.get_by_test_id("chat-input")).to_have_value(question)
    expect(chat.get_by_test_id("chat-input")).to_be_focused()


def test_a_long_question_wraps_in_the_list_and_shows_in_full_on_focus(chat: Page, key: str):
    question = f"{'Where exactly are the offsite backup copies kept ' * 6}[[mock:clean#{key}]]"
    answered(chat, question)
    item = chat.get_by_test_id("history").get_by_role("button", name=question)
    clamped = item.bounding_box()
    panel = chat.get_by_test_id("history-panel").bounding_box()
    assert clamped is not None
    assert panel is not None
    assert clamped["x"] + clamped["width"] <= panel["x"] + panel["width"]  # wraps, no overflow

    item.focus()
    chat.keyboard.press("Shift+Tab")
    chat.keyboard.press("Tab")  # focus from the keyboard: :focus-visible applies
    expect(item).to_be_focused()
    full = item.bounding_box()
    assert full is not None
    assert full["height"] > clamped["height"]


def test_a_failed_turn_shows_its_error_leaves_the_page_usable_and_is_not_restored(
    chat: Page, shots: Shots, key: str
):
    failed = ask(chat, f"{BACKUPS} [[mock:drop-mid-stream#{key}a]]")
    expect(failed).to_have_attribute("data-state", "error")
    expect(failed.get_by_test_id("chat-error")).to_be_visible()
    expect(failed.get_by_test_id("chat-error")).not_to_be_empty()
    shots.take("error")

    again = answered(chat, f"{BACKUPS} [[mock:clean#{key}b]]")
    expect(again.get_by_test_id("answer")).to_contain_text("Backups run nightly")

    chat.reload()

    restored = chat.locator(ASSISTANT)
    expect(restored, "only the completed turn is stored").to_have_count(1)
    expect(restored.get_by_test_id("answer")).to_contain_text("Backups run nightly")
