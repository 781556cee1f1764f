"""Stop generation closes the upstream stream; hostile model output renders inert."""

from __future__ import annotations

from urllib.parse import urlsplit

from playwright.sync_api import Dialog, Page, Request, expect

from .checks import Checks
from .conftest import Shots, Stack
from .page_driver import answered, ask

# Attributes that run or load something: event handlers and sources.
LIVE_ATTRIBUTES = """(answer) => [...answer.querySelectorAll('*')].flatMap(
    (element) => element.getAttributeNames().filter(
        (name) => name.startsWith('on') || ['src', 'srcdoc', 'srcset'].includes(name)
    )
)"""


def test_stop_ends_the_turn_and_the_mock_sees_the_disconnect(
    chat: Page, stack: Stack, shots: Shots, key: str
):
    message = ask(chat, f"Walk me through the backup [[mock:slow#{key}]]")
    expect(message.get_by_test_id("answer")).not_to_be_empty()
    shots.take("streaming")
    chat.get_by_test_id("chat-stop").click()
    expect(message).to_have_attribute("data-state", "done")
    expect(message).to_have_attribute("data-stopped", "true")
    expect(chat.get_by_test_id("chat-send")).to_be_enabled()
    # The slow flow runs for seconds more: left open, it would end `completed`.
    assert [e.outcome for e in stack.journal(key)] == ["client_disconnected"]
    assert not [t for t in stack.history() if key in t["question"]]


def test_hostile_html_links_and_images_render_inert_and_load_nothing(
    tab: Page, stack: Stack, key: str
):
    """On a tab of its own, whose every dialog and request it watches."""
    dialogs: list[str] = []
    outside: list[str] = []
    app_origin = urlsplit(stack.app_url).netloc

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    def on_request(request: Request) -> None:
        if urlsplit(request.url).netloc != app_origin:
            outside.append(request.url)

    tab.on("dialog", on_dialog)
    tab.on("request", on_request)
    tab.goto(stack.app_url + "/")
    answer = answered(tab, f"Show me the notes [[mock:xss#{key}]]").get_by_test_id("answer")
    checks = Checks()
    with checks.check("HTML shows as text, markdown still renders"):
        expect(answer).to_contain_text("<script>")  # shown as text, not run
        expect(answer.locator("strong")).to_have_text("Bold")
        for tag in ("script", "img", "svg", "iframe"):
            expect(answer.locator(tag)).to_have_count(0)
    with checks.check("links to javascript: and data: have no target"):
        for name in ("a harmless looking link", "another one", "data link"):
            assert answer.get_by_text(name).get_attribute("href") is None, name
    with checks.check("an image shows as its alt text and links nowhere"):
        expect(answer).to_contain_text("[image: status badge]")
        expect(answer.locator("[href*='attacker.invalid']")).to_have_count(0)
    # Nothing is left that could run later (no element has a handler or loads anything), so
    # what has not run or been requested by now never will: no fixed wait for a late onerror.
    with checks.check("nothing ran, nothing left the app's origin"):
        assert answer.evaluate(LIVE_ATTRIBUTES) == []
        assert tab.evaluate("window.__sg_xss") is None
        assert dialogs == []
        assert outside == []
    checks.verify()
