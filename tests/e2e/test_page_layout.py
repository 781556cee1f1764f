"""The page's layout on a desktop (1280x800) and a phone (390x844) screen: the composer
never covers the conversation, a new answer comes into view, a streaming answer is followed
unless the reader scrolled up, and on a phone the question list waits behind a button."""

from __future__ import annotations

import pytest
from playwright.sync_api import FloatRect, Locator, Page, expect

from .conftest import SIZES
from .page_driver import ASSISTANT, answered, ask

BACKUPS = "When do backups run?"

AT_END = "log => log.scrollHeight - log.scrollTop - log.clientHeight <= 2"


@pytest.fixture(params=list(SIZES))
def sized(chat: Page, request: pytest.FixtureRequest) -> Page:
    chat.set_viewport_size(SIZES[request.param])
    return chat


def box(locator: Locator) -> FloatRect:
    found = locator.bounding_box()
    assert found is not None, f"{locator} has no box"
    return found


def fill_the_log(page: Page, key: str, turns: int = 4) -> None:
    for n in range(turns):
        answered(page, f"{BACKUPS} [[mock:clean#{key}f{n}]]")


def test_the_composer_never_covers_the_latest_answer(sized: Page, key: str):
    fill_the_log(sized, key)
    latest = sized.locator(ASSISTANT).last
    sources = latest.get_by_test_id("sources")

    composer = box(sized.get_by_test_id("chat-form"))
    assert box(latest)["y"] + box(latest)["height"] <= composer["y"] + 0.5
    centre = box(sources)
    hit = sized.evaluate(
        "([x, y]) => document.elementFromPoint(x, y)?.closest('[data-testid=sources]') !== null",
        [centre["x"] + centre["width"] / 2, centre["y"] + centre["height"] / 2],
    )
    assert hit, "the latest answer's sources are covered"


def test_a_new_question_scrolls_to_its_answer_even_after_scrolling_up(sized: Page, key: str):
    fill_the_log(sized, key)
    log = sized.get_by_test_id("chat-log")
    log.evaluate("log => { log.scrollTop = 0; }")

    latest = answered(sized, f"{BACKUPS} [[mock:clean#{key}new]]")

    shown, area = box(latest), box(log)
    assert shown["y"] < area["y"] + area["height"]  # the answer is in the visible area
    assert shown["y"] + shown["height"] <= area["y"] + area["height"] + 0.5
    assert log.evaluate(AT_END)


def test_the_view_follows_a_streaming_answer(chat: Page, key: str):
    fill_the_log(chat, key)
    log = chat.get_by_test_id("chat-log")
    message = ask(chat, f"{BACKUPS} [[mock:slow#{key}]]")
    answer = message.get_by_test_id("answer")

    # The answer grows well past the visible area while the view stays at its end.
    chat.wait_for_function(
        f"([a, log]) => a.textContent.length > 400 && ({AT_END})(log)",
        arg=[answer.element_handle(), log.element_handle()],
    )
    chat.get_by_test_id("chat-stop").click()
    expect(message).to_have_attribute("data-state", "done")


def test_a_reader_who_scrolled_up_is_left_there_while_the_answer_streams(chat: Page, key: str):
    fill_the_log(chat, key)
    log = chat.get_by_test_id("chat-log")
    message = ask(chat, f"{BACKUPS} [[mock:slow#{key}]]")
    answer = message.get_by_test_id("answer")
    chat.wait_for_function("a => a.textContent.length > 40", arg=answer.element_handle())

    log.hover()
    chat.mouse.wheel(0, -5000)  # the reader scrolls up, as a person does
    chat.wait_for_function("log => log.scrollTop === 0", arg=log.element_handle())
    grown = len(answer.text_content() or "") + 200
    chat.wait_for_function(f"a => a.textContent.length > {grown}", arg=answer.element_handle())

    assert log.evaluate("log => log.scrollTop") == 0
    chat.get_by_test_id("chat-stop").click()
    expect(message).to_have_attribute("data-state", "done")


def test_on_a_phone_the_question_list_waits_behind_a_button(chat: Page, key: str):
    chat.set_viewport_size(SIZES["phone"])
    answered(chat, f"{BACKUPS} [[mock:clean#{key}]]")
    panel = chat.get_by_test_id("history-panel")
    toggle = chat.get_by_test_id("history-toggle")
    expect(panel).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")

    toggle.click()

    expect(panel).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(chat.get_by_test_id("history")).to_contain_text(key)
    expect(chat.get_by_test_id("chat-input")).to_be_in_viewport()


def test_on_a_desktop_the_question_list_shows_and_needs_no_button(chat: Page):
    chat.set_viewport_size(SIZES["desktop"])
    expect(chat.get_by_test_id("history-panel")).to_be_visible()
    expect(chat.get_by_test_id("history-toggle")).to_be_hidden()


def test_nothing_on_a_phone_is_wider_than_the_screen(chat: Page, key: str):
    chat.set_viewport_size(SIZES["phone"])
    answered(chat, f"{'averyveryverylongwordwithoutanyspaces' * 8} [[mock:markdown#{key}]]")
    widest = chat.evaluate("() => document.documentElement.scrollWidth")
    assert widest <= SIZES["phone"]["width"]
