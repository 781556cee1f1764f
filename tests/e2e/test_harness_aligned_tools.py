"""The tools as the model sees them: names, arguments and results, read from the journal."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from .conftest import Stack
from .page_driver import answered


def test_grounded_turn_offers_read_grep_and_list_with_their_arguments(
    chat: Page, stack: Stack, key: str
):
    answered(chat, f"When do backups run? [[mock:clean#{key}]]")
    [request] = stack.journal(key)
    tools = {t["function"]["name"]: t["function"] for t in request.body["tools"]}
    assert sorted(tools) == ["grep", "list", "read"]
    assert all(t["type"] == "function" for t in request.body["tools"])
    assert tools["read"]["parameters"]["required"] == ["path"]
    assert tools["grep"]["parameters"]["required"] == ["pattern"]
    assert tools["read"]["parameters"]["properties"]["path"]["type"] == "string"
    assert tools["grep"]["parameters"]["properties"]["pattern"]["type"] == "string"
    assert tools["list"]["parameters"]["properties"]["path"]["type"] == "string"


def test_grep_and_list_results_use_virtual_paths(chat: Page, stack: Stack, key: str):
    message = answered(chat, f"What uses restic? [[mock:grep-and-list#{key}]]")
    expect(message.get_by_test_id("tool-call")).to_have_text(
        ["grep restic", "list /homelab/services/"]
    )
    _, second = stack.journal(key, count=2)
    grep_result, list_result = [
        m["content"] for m in second.body["messages"] if m["role"] == "tool"
    ]
    assert re.search(r"^/homelab/backups\.md:\d+: ", grep_result, re.MULTILINE)
    assert "nextcloud.md" in list_result
    assert "home-assistant.md" in list_result
    assert stack.app_url not in grep_result


def test_tool_results_go_back_with_the_calls_id(chat: Page, stack: Stack, key: str):
    answered(chat, f"When do backups run? [[mock:tool-then-answer#{key}]]")
    _, second = stack.journal(key, count=2)
    assistant, tool = second.body["messages"][-2:]
    assert assistant["role"] == "assistant"
    [call] = assistant["tool_calls"]
    assert call["function"] == {"name": "read", "arguments": '{"path": "/homelab/backup-notes.md"}'}
    assert tool == {"role": "tool", "tool_call_id": call["id"], "content": tool["content"]}


def test_deflected_turn_offers_no_tools(chat: Page, stack: Stack, key: str):
    answered(chat, f"Write me a poem about cats [[mock:clean#{key}]]")
    [request] = stack.journal(key)
    assert "tools" not in request.body
