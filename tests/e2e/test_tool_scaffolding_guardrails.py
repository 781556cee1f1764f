"""The guardrail as a person sees it: raw tool-call markup never reaches the page.

"Never" includes for a moment while streaming: a recorder of every DOM mutation is
installed before the page's own scripts run (tests/e2e/dom_recorder.js), and a positive
control proves it is live (it must have seen the turn's clean answer and a marker the test
writes into the page). The scaffold flows' markup carries a canary string, so a leak is
caught even where an app stripped the delimiters but kept the body.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import TIMEOUT_MS, Stack
from .page_driver import answered, ask

RECORDER = Path(__file__).with_name("dom_recorder.js")
MALFORMED_REPLY = "The model returned a malformed reply — please try again."
MARKUP = ("<|tool_call_start|>", "<|tool_call_end|>", "tool_call")
LIVE_MARKER = "sg-recorder-is-live"


@pytest.fixture
def recorded(page: Page, stack: Stack) -> Page:
    page.set_default_timeout(TIMEOUT_MS)
    page.add_init_script(path=str(RECORDER))
    page.goto(stack.app_url + "/")
    return page


def recorded_text(page: Page) -> str:
    return page.evaluate("window.__sgRecorded()")


def prove_recorder_is_live(page: Page, must_have_seen: str) -> None:
    page.evaluate(
        "marker => document.body.append(Object.assign(document.createElement('i'),"
        " {textContent: marker}))",
        LIVE_MARKER,
    )
    seen = recorded_text(page)
    assert LIVE_MARKER in seen
    assert must_have_seen in seen


def assert_never_shown(page: Page, canary: str) -> None:
    seen = recorded_text(page)
    assert canary not in seen
    for marker in MARKUP:
        assert marker not in seen, f"{marker!r} reached the page"


def test_a_scaffold_only_answer_is_recovered_and_no_markup_ever_reaches_the_page(
    recorded: Page, stack: Stack, key: str
):
    message = answered(recorded, f"When do backups run? [[mock:scaffold-recover#{key}]]")

    expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly at 02:00")
    expect(message.get_by_test_id("chat-retry")).to_be_hidden()
    prove_recorder_is_live(recorded, "Backups run nightly at 02:00")
    assert "The model's reply was not usable; asking it again" in recorded_text(recorded)
    assert_never_shown(recorded, "sgcanary-recover-41f7")
    assert len(stack.journal(key, 2)) == 2


def test_markup_split_one_character_per_chunk_never_reaches_the_page(recorded: Page, key: str):
    message = answered(recorded, f"When do backups run? [[mock:scaffold-split#{key}]]")

    expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly at 02:00")
    prove_recorder_is_live(recorded, "Backups run nightly at 02:00")
    assert_never_shown(recorded, "sgcanary-split-93c2")


def test_scaffold_twice_shows_the_error_state_and_the_page_stays_usable(
    recorded: Page, stack: Stack, key: str
):
    failed = ask(recorded, f"When do backups run? [[mock:scaffold-repeat#{key}]]")

    expect(failed).to_have_attribute("data-state", "error")
    expect(failed.get_by_test_id("chat-error")).to_have_text(MALFORMED_REPLY)
    expect(failed.get_by_test_id("answer")).to_be_empty()
    assert len(stack.journal(key, 2)) == 2
    assert all(f"[[mock:scaffold-repeat#{key}]]" not in t["question"] for t in stack.history())

    next_key = f"{key}-next"
    message = answered(recorded, f"When do backups run? [[mock:clean#{next_key}]]")
    expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly at 02:00")
    prove_recorder_is_live(recorded, MALFORMED_REPLY)
    assert_never_shown(recorded, "sgcanary-repeat-5d08")
