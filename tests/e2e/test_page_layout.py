"""The page's layout on a desktop (1280x800) and a phone (390x844) screen: the composer
never covers the conversation, a new answer comes into view, a streaming answer is followed
unless the reader scrolled up, and on a phone the question list waits behind a button."""

from __future__ import annotations

import pytest
from playwright.sync_api import FloatRect, Locator, Page, expect

from .checks import Checks
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


def test_the_latest_answer_shows_above_the_composer_and_a_new_one_after_scrolling_up(
    sized: Page, key: str
):
    fill_the_log(sized, key)
    log = sized.get_by_test_id("chat-log")
    checks = Checks()
    with checks.check("the composer never covers the latest answer"):
        latest = sized.locator(ASSISTANT).last
        composer = box(sized.get_by_test_id("chat-form"))
        assert box(latest)["y"] + box(latest)["height"] <= composer["y"] + 0.5
        centre = box(latest.get_by_test_id("sources"))
        hit = sized.evaluate(
            "([x, y]) => document.elementFromPoint(x, y)?.closest('[data-testid=sources]') "
            "!== null",
            [centre["x"] + centre["width"] / 2, centre["y"] + centre["height"] / 2],
        )
        assert hit, "the latest answer's sources are covered"
    with checks.check("a new question scrolls to its answer even after scrolling up"):
        log.evaluate("log => { log.scrollTop = 0; }")
        latest = answered(sized, f"{BACKUPS} [[mock:clean#{key}new]]")
        shown, area = box(latest), box(log)
        assert shown["y"] < area["y"] + area["height"]  # the answer is in the visible area
        assert shown["y"] + shown["height"] <= area["y"] + area["height"] + 0.5
        assert log.evaluate(AT_END)
    checks.verify()


def test_the_view_follows_a_streaming_answer_unless_the_reader_scrolled_up(chat: Page, key: str):
    """While the answer grows well past the visible area the view stays at its end; once
    the reader scrolls up (with the mouse wheel, as a person does) it is left there while
    the answer goes on growing."""
    fill_the_log(chat, key)
    log = chat.get_by_test_id("chat-log")
    message = ask(chat, f"{BACKUPS} [[mock:steady#{key}]]")
    answer = message.get_by_test_id("answer")

    chat.wait_for_function(
        f"([a, log]) => a.textContent.length > 400 && ({AT_END})(log)",
        arg=[answer.element_handle(), log.element_handle()],
    )

    log.hover()
    chat.mouse.wheel(0, -5000)
    chat.wait_for_function("log => log.scrollTop === 0", arg=log.element_handle())
    grown = len(answer.text_content() or "") + 200
    chat.wait_for_function(f"a => a.textContent.length > {grown}", arg=answer.element_handle())

    assert log.evaluate("log => log.scrollTop") == 0, "the view moved while the reader was up"
    chat.get_by_test_id("chat-stop").click()
    expect(message).to_have_attribute("data-state", "done")


def test_the_question_list_shows_on_a_desktop_and_waits_behind_a_button_on_a_phone(
    chat: Page, key: str
):
    chat.set_viewport_size(SIZES["desktop"])
    panel = chat.get_by_test_id("history-panel")
    toggle = chat.get_by_test_id("history-toggle")
    expect(panel, "the list on a desktop").to_be_visible()
    expect(toggle, "the button on a desktop").to_be_hidden()

    chat.set_viewport_size(SIZES["phone"])
    answered(chat, f"{BACKUPS} [[mock:clean#{key}]]")
    expect(panel).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")

    toggle.click()

    expect(panel).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(chat.get_by_test_id("history")).to_contain_text(key)
    expect(chat.get_by_test_id("chat-input")).to_be_in_viewport()


def test_nothing_on_a_phone_is_wider_than_the_screen(chat: Page, key: str):
    chat.set_viewport_size(SIZES["phone"])
    answered(chat, f"{'averyveryverylongwordwithoutanyspaces' * 8} [[mock:markdown#{key}]]")
    widest = chat.evaluate("() => document.documentElement.scrollWidth")
    assert widest <= SIZES["phone"]["width"]
