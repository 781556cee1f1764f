"""The tools as the model sees them: names, arguments and results, read from the journal."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from .checks import Checks
from .conftest import Stack
from .page_driver import answered


def test_a_grounded_turn_offers_read_grep_and_list_and_their_results_use_virtual_paths(
    chat: Page, stack: Stack, key: str
):
    message = answered(chat, f"What uses restic? [[mock:grep-and-list#{key}]]")
    first, second = stack.journal(key, count=2)
    checks = Checks()
    with checks.check("read, grep and list are offered with their arguments"):
        tools = {t["function"]["name"]: t["function"] for t in first.body["tools"]}
        assert sorted(tools) == ["grep", "list", "read"]
        assert all(t["type"] == "function" for t in first.body["tools"])
        assert tools["read"]["parameters"]["required"] == ["path"]
        assert tools["grep"]["parameters"]["required"] == ["pattern"]
        assert tools["read"]["parameters"]["properties"]["path"]["type"] == "string"
        assert tools["grep"]["parameters"]["properties"]["pattern"]["type"] == "string"
        assert tools["list"]["parameters"]["properties"]["path"]["type"] == "string"
    with checks.check("grep and list results name virtual paths"):
        expect(message.get_by_test_id("tool-call")).to_have_text(
            ["grep restic", "list /homelab/services/"]
        )
        grep_result, list_result = [
            m["content"] for m in second.body["messages"] if m["role"] == "tool"
        ]
        assert re.search(r"^/homelab/backups\.md:\d+: ", grep_result, re.MULTILINE), grep_result
        assert "nextcloud.md" in list_result, list_result
        assert "home-assistant.md" in list_result, list_result
        assert stack.app_url not in grep_result, grep_result
    checks.verify()
