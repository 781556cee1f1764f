"""The agent's document tools as the page shows them, and what the model got back."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import Shots, Stack
from .page_driver import answered


def test_tool_call_shows_as_a_chip_with_the_note_path(chat: Page, shots: Shots, key: str):
    message = answered(chat, f"When do backups run? [[mock:tool-then-answer#{key}]]")
    chip = message.get_by_test_id("tool-call")
    expect(chip).to_have_count(1)
    expect(chip).to_have_text("read /homelab/backup-notes.md")
    expect(message.get_by_test_id("sources")).to_contain_text("/homelab/backup-notes.md")


def test_reading_a_note_sends_its_text_back_to_the_model_with_the_calls_id(
    chat: Page, stack: Stack, key: str
):
    message = answered(chat, f"How is DNS set up? [[mock:read-dns#{key}]]")
    expect(message.get_by_test_id("tool-call")).to_have_text("read /homelab/dns.md")
    _, second = stack.journal(key, count=2)
    assistant, tool = second.body["messages"][-2:]
    assert assistant["role"] == "assistant"
    [call] = assistant["tool_calls"]
    assert call["function"] == {"name": "read", "arguments": '{"path": "/homelab/dns.md"}'}
    assert tool == {"role": "tool", "tool_call_id": call["id"], "content": tool["content"]}
    assert tool["content"].startswith("# DNS")
    assert "unbound" in tool["content"]


def test_a_path_outside_the_notes_is_refused(chat: Page, stack: Stack, key: str):
    message = answered(chat, f"When do backups run? [[mock:read-outside#{key}]]")
    chips = message.get_by_test_id("tool-call")
    expect(chips).to_have_count(2)
    for index in range(2):
        expect(chips.nth(index)).to_contain_text("(refused)")
    _, second = stack.journal(key, count=2)
    results = [m["content"] for m in second.body["messages"] if m["role"] == "tool"]
    assert len(results) == 2
    assert all("root:" not in r and "/etc" not in r for r in results)
