"""The kit's DOM recorder reports a watched string's first sighting even when the page showed
it and took it away again within one batch of changes (one task: two stream frames handled
together), where no whole text of the page ever holds it.

Regression: the recorder looked for watched strings only in each batch's whole texts, so the
self-test's transient-flash target, whose raw deltas are replaced at the end of its turn,
failed its NEVER check's evidence (no sighting, no screenshot) on a loaded machine only.
"""

from __future__ import annotations

from playwright.sync_api import Page

from conformance.browser.recording import DomRecording

from .conftest import Stack

MARKER = "<|tool_call_start|>"
FLASH_A_NODE = """() => {
  const node = document.createElement("p");
  node.textContent = "Backups " + "<|tool_call_start|>" + "[read()]";
  document.body.append(node);
  node.remove();
}"""
FLASH_A_TEXT = """() => {
  const text = document.createTextNode("Backups run nightly.");
  document.body.append(text);
  return new Promise((done) => setTimeout(() => {
    text.data = "Backups " + "<|tool_call_start|>";
    text.data = "Backups run nightly.";
    done();
  }, 0));
}"""


def sightings_after(tab: Page, stack: Stack, flash: str) -> list[str]:
    recording = DomRecording(tab)
    tab.goto(stack.app_url + "/")
    recording.watch((MARKER,))
    tab.evaluate(flash)
    assert MARKER in recording.text()  # flushed: every report and sighting is in
    return [sighting.text for sighting in recording.sightings]


def test_a_node_added_and_removed_within_one_task_is_sighted(tab: Page, stack: Stack):
    assert sightings_after(tab, stack, FLASH_A_NODE) == [MARKER]


def test_a_text_changed_and_changed_back_within_one_task_is_sighted(tab: Page, stack: Stack):
    assert sightings_after(tab, stack, FLASH_A_TEXT) == [MARKER]
