"""The docs name what the code has: every built-in flow is documented, and nothing more."""

from __future__ import annotations

import re
from pathlib import Path

from mock_llm import builtin_flows

DOCS = Path(__file__).parents[3] / "docs" / "mock_llm.md"


def documented_flows() -> set[str]:
    text = DOCS.read_text(encoding="utf-8")
    table = text.split("## Built-in flows", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", table, flags=re.MULTILINE))


def test_every_built_in_flow_has_a_row_in_the_docs():
    assert documented_flows() == set(builtin_flows())


def test_documented_step_counts_match_the_flows():
    text = DOCS.read_text(encoding="utf-8")
    for name, flow in builtin_flows().items():
        assert re.search(rf"^\| `{name}` \| {len(flow.steps)} \|", text, flags=re.MULTILINE), name
