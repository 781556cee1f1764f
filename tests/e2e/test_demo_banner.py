"""The embedded demo's banner: one click plays a failure shape, with a fresh KEY each time."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from ..support.servers import app_settings, serve_app
from .checks import Checks
from .conftest import Stack
from .page_driver import ASSISTANT, wait_ready

# Each example's flow, and how its turn ends in a guarded app.
EXAMPLES = {
    "Split markup": ("scaffold-split", "done"),
    "Markup twice": ("scaffold-repeat", "error"),
    "Markup in prose": ("scaffold-mixed", "done"),
    "Thinking with markup": ("thinking-scaffold", "done"),
    "A tool call": ("tool-then-answer", "done"),
    "Upstream 503": ("error-then-ok", "done"),
    "Dropped stream": ("drop-mid-stream", "error"),
    "Hostile HTML": ("xss", "done"),
}
KEY_OF_LINK = re.compile(r"[?&]key=(demo-[0-9a-f]{8})$")


def click_example(chat: Page, label: str):
    wait_ready(chat)  # a click while the last turn winds down would be ignored
    before = chat.locator(ASSISTANT).count()
    chat.get_by_test_id("demo-examples").get_by_role("button", name=label, exact=True).click()
    message = chat.locator(ASSISTANT).nth(before)
    expect(message).not_to_have_attribute("data-state", "streaming")
    return message


def test_the_banner_offers_every_failure_example_and_each_plays_its_flow(chat: Page, stack: Stack):
    """The banner names the mock and links its journal, and offers every example; each
    example in turn, on this one page, plays: the turn ends as its flow does in a guarded
    app, the question carries the flow's trigger, no markup shows outside the thinking,
    and the turn links to the mock's journal for its KEY, whose first request played the
    flow. The failure names the banner, or each example, that did not."""
    checks = Checks()
    with checks.check("the banner"):
        banner = chat.get_by_test_id("demo-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("mock_llm")
        expect(chat.get_by_test_id("demo-example")).to_have_text(list(EXAMPLES))
        expect(chat.get_by_test_id("demo-journal")).to_have_attribute(
            "href", f"{stack.mock_url}/_mock/requests"
        )
    for label, (flow, state) in EXAMPLES.items():
        with checks.check(label):
            message = click_example(chat, label)
            expect(message).to_have_attribute("data-state", state)
            expect(chat.get_by_test_id("message-user").last).to_contain_text(f"[[mock:{flow}#demo-")
            href = message.get_by_test_id("turn-journal").get_attribute("href") or ""
            key = KEY_OF_LINK.search(href)
            assert key is not None, f"no journal KEY in {href!r}"
            assert href.startswith(f"{stack.mock_url}/_mock/requests?"), href
            [first, *_] = stack.journal(key[1])
            assert first.flow == flow, first.flow
            shown = (message.text_content() or "").replace(
                message.get_by_test_id("thinking").text_content() or "", ""
            )
            assert "<|tool_call" not in shown, shown
    checks.verify()


def test_an_example_clicked_again_replays_its_flow_from_the_start(chat: Page, stack: Stack):
    keys = []
    for _ in range(2):
        message = click_example(chat, "Split markup")
        expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly")
        expect(message.locator(".status")).to_contain_text("asked once more")
        href = message.get_by_test_id("turn-journal").get_attribute("href") or ""
        found = KEY_OF_LINK.search(href)
        assert found is not None
        keys.append(found[1])
    assert keys[0] != keys[1]
    for key in keys:  # each click: the markup, then the one recovery
        assert [e.request_in_turn for e in stack.journal(key, count=2)] == [1, 2]


def test_with_a_real_model_no_banner_and_no_journal_links_show(
    tab: Page, stack: Stack, tmp_path: Path, key: str
):
    settings = app_settings(stack.mock_url, tmp_path)  # no embedded mock: a configured model
    assert settings.embedded_mock_url is None
    with serve_app(settings) as url:
        tab.goto(url + "/")
        tab.fill("[data-testid=chat-input]", f"When do backups run? [[mock:clean#{key}]]")
        tab.keyboard.press("Enter")
        message = tab.locator(ASSISTANT).first
        expect(message).to_have_attribute("data-state", "done")
        expect(tab.get_by_test_id("demo-banner")).to_be_hidden()
        expect(tab.get_by_test_id("demo-example")).to_have_count(0)
        expect(message.get_by_test_id("turn-journal")).to_have_count(0)
