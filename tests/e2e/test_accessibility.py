"""The page works from the keyboard alone, its controls are labelled, answers announced once."""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe  # pyright: ignore[reportMissingTypeStubs]
from playwright.sync_api import Page, expect

from .checks import Checks
from .conftest import SIZES
from .page_driver import ASSISTANT, answered, ask

RECORD_ANNOUNCEMENTS = """() => {
    window.__announcements = [];
    const region = document.querySelector('[data-testid=announcer]');
    new MutationObserver(() => window.__announcements.push(region.textContent))
        .observe(region, {childList: true, characterData: true, subtree: true});
}"""


def test_every_control_is_named_a_question_goes_from_the_keyboard_and_is_announced_once(
    chat: Page, key: str
):
    """One turn, three named checks: the controls' accessible names; a question asked
    from the keyboard alone (the skip link, typing, Enter), focus back in the box after
    it; and its answer announced once, when complete, not per chunk."""
    checks = Checks()
    with checks.check("every control has an accessible name"):
        expect(chat.get_by_role("textbox", name="Your question")).to_be_visible()
        expect(chat.get_by_role("button", name="Send")).to_be_visible()
        expect(chat.get_by_role("button", name="Stop")).to_be_disabled()
    chat.evaluate(RECORD_ANNOUNCEMENTS)
    with checks.check("a question can be asked from the keyboard alone"):
        chat.locator("body").focus()
        chat.keyboard.press("Tab")  # the skip link
        chat.keyboard.press("Enter")
        expect(chat.get_by_test_id("chat-input")).to_be_focused()
        chat.keyboard.type(f"When do backups run? [[mock:clean#{key}]]")
        chat.keyboard.press("Enter")
        expect(chat.locator(ASSISTANT)).to_have_attribute("data-state", "done")
        expect(chat.get_by_test_id("chat-input")).to_be_focused()
    with checks.check("the answer is announced once, not per chunk"):
        expect(chat.locator(ASSISTANT)).to_have_attribute("data-state", "done")
        announcements = chat.evaluate("window.__announcements")
        assert len(announcements) == 1, announcements
        assert announcements[0].startswith("Answer:"), announcements
    checks.verify()


# --- axe-core audit ---------------------------------------------------------------------------

AXE_SCRIPT: str = Axe().axe_script
"""axe-core, as axe-playwright-python injects it."""

SEVERE_VIOLATIONS = """() => axe.run({resultTypes: ["violations"]}).then((results) =>
    results.violations.filter((v) => v.impact === "serious" || v.impact === "critical"))"""
"""axe-playwright-python's run (the same options), keeping only what the test reads: the
library injects axe-core (half a megabyte) anew at every run and sends back every result."""


def severe_violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not page.evaluate("() => 'axe' in window"):  # once per document
        page.evaluate(AXE_SCRIPT)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in page.evaluate(SEVERE_VIOLATIONS)
    ]


def test_axe_finds_no_serious_or_critical_violation_in_any_state(chat: Page, key: str):
    """One walk through the page's states, each audited at every size of SIZES: idle (with
    the demo banner), streamed answers (markdown, tool chips), the error state (with an
    upstream message), and the past-question dialog (opened from the list, which waits
    behind its button on the phone)."""
    found: dict[str, list[str]] = {}

    def audit(state: str) -> None:
        for size, viewport in SIZES.items():
            chat.set_viewport_size(viewport)
            found[f"{state} ({size})"] = severe_violations(chat)

    expect(chat.get_by_test_id("demo-banner")).to_be_visible()
    audit("idle")

    answered(chat, f"How do I restore? [[mock:markdown#{key}a]]")
    answered(chat, f"How is DNS set up for the local zone? [[mock:read-dns#{key}b]]")
    audit("streamed answers")

    message = ask(chat, f"When do backups run? [[mock:scafold-split#{key}c]]")
    expect(message.get_by_test_id("chat-error-upstream")).to_be_visible()
    audit("error")

    dialog = chat.get_by_test_id("past-turn")
    for size, viewport in SIZES.items():
        chat.set_viewport_size(viewport)
        if chat.get_by_test_id("history-toggle").is_visible():
            chat.get_by_test_id("history-toggle").click()
        chat.get_by_test_id("history").get_by_role("button").first.click()
        expect(dialog).to_be_visible()
        found[f"history view ({size})"] = severe_violations(chat)
        chat.keyboard.press("Escape")
        expect(dialog).to_be_hidden()

    assert {state: v for state, v in found.items() if v} == {}
