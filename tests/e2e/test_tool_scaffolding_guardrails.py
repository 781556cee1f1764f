"""The guardrail as a person sees it: raw tool-call markup never reaches the page.

"Never" includes for a moment while streaming: a recorder of every DOM mutation is
installed before the page's own scripts run (the conformance kit's,
conformance/browser/js/recorder.js), and a positive control proves it is live (it must have
seen the turn's clean answer and a marker the test writes into the page). The scaffold
flows' markup carries a canary string, so a leak is caught even where an app stripped the
delimiters but kept the body.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from conformance.browser.recording import DomRecording

from .conftest import Stack
from .page_driver import answered, ask

MALFORMED_REPLY = "The model returned a malformed reply — please try again."
MARKUP = ("<|tool_call_start|>", "<|tool_call_end|>", "tool_call")


@dataclass(frozen=True)
class Recorded:
    page: Page
    recording: DomRecording


@pytest.fixture
def recorded(tab: Page, stack: Stack) -> Recorded:
    recording = DomRecording(tab)
    tab.goto(stack.app_url + "/")
    return Recorded(tab, recording)


def prove_recorder_is_live(recorded: Recorded, must_have_seen: str) -> None:
    recorded.recording.prove_live()
    assert must_have_seen in recorded.recording.text()


def assert_never_shown(recorded: Recorded, canary: str) -> None:
    seen = recorded.recording.text()
    assert canary not in seen
    for marker in MARKUP:
        assert marker not in seen, f"{marker!r} reached the page"


def test_a_scaffold_only_answer_is_recovered_and_no_markup_ever_reaches_the_page(
    recorded: Recorded, stack: Stack, key: str
):
    message = answered(recorded.page, f"When do backups run? [[mock:scaffold-recover#{key}]]")

    expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly at 02:00")
    expect(message.get_by_test_id("chat-retry")).to_be_hidden()
    prove_recorder_is_live(recorded, "Backups run nightly at 02:00")
    assert "The model's reply was not usable; asking it again" in recorded.recording.text()
    assert_never_shown(recorded, "sgcanary-recover-41f7")
    assert len(stack.journal(key, 2)) == 2


def test_markup_split_one_character_per_chunk_never_reaches_the_page(recorded: Recorded, key: str):
    message = answered(recorded.page, f"When do backups run? [[mock:scaffold-split#{key}]]")

    expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly at 02:00")
    prove_recorder_is_live(recorded, "Backups run nightly at 02:00")
    assert_never_shown(recorded, "sgcanary-split-93c2")


def test_scaffold_twice_shows_the_error_state_and_the_page_stays_usable(
    recorded: Recorded, stack: Stack, key: str
):
    failed = ask(recorded.page, f"When do backups run? [[mock:scaffold-repeat#{key}]]")

    expect(failed).to_have_attribute("data-state", "error")
    expect(failed.get_by_test_id("chat-error")).to_have_text(MALFORMED_REPLY)
    expect(failed.get_by_test_id("answer")).to_be_empty()
    assert len(stack.journal(key, 2)) == 2
    assert all(f"[[mock:scaffold-repeat#{key}]]" not in t["question"] for t in stack.history())

    next_key = f"{key}-next"
    message = answered(recorded.page, f"When do backups run? [[mock:clean#{next_key}]]")
    expect(message.get_by_test_id("answer")).to_contain_text("Backups run nightly at 02:00")
    prove_recorder_is_live(recorded, MALFORMED_REPLY)
    assert_never_shown(recorded, "sgcanary-repeat-5d08")
