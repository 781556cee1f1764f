from __future__ import annotations

from pathlib import Path

import pytest

from mock_llm.catalog import builtin_flows, catalog_to_json, load_catalog
from mock_llm.flow_file import FlowFileError

CONTRACT_FLOWS = {
    "clean", "scaffold-recover", "scaffold-split", "scaffold-repeat", "scaffold-mixed",
    "scaffold-standalone", "lookalike", "partial-tail", "unterminated", "thinking-scaffold",
    "tool-then-answer", "tool-with-scaffold", "error-then-ok", "rate-limited",
    "drop-mid-stream", "slow", "xss",
}  # fmt: skip


def test_every_flow_named_by_the_design_is_built_in():
    assert set(builtin_flows()) >= CONTRACT_FLOWS


def test_no_trigger_has_a_default_flow():
    assert "default" in builtin_flows()


@pytest.mark.parametrize("name", sorted(f for f in builtin_flows() if builtin_flows()[f].canary))
def test_each_canary_sits_inside_its_flows_markup(name: str):
    flow = builtin_flows()[name]
    assert flow.canary
    spans = [s.content for s in flow.steps if "<|tool_call_start|>" in s.content]
    assert spans
    assert all(flow.canary in span for span in spans)


def test_every_scaffold_span_flow_has_a_canary():
    for flow in builtin_flows().values():
        if any("<|tool_call_start|>" in s.content for s in flow.steps):
            assert flow.canary, flow.name


def test_user_flow_file_adds_and_overrides(tmp_path: Path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "flows:\n  default: {steps: [{content: mine}]}\n  extra: {steps: [{content: x}]}\n",
        encoding="utf-8",
    )
    flows = load_catalog([path])
    assert flows["default"].steps[0].content == "mine"
    assert flows["default"].source == str(path)
    assert "extra" in flows
    assert "clean" in flows


def test_bad_user_flow_file_stops_loading(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("flows:\n  x:\n    steps: [{content: 1}]\n", encoding="utf-8")
    with pytest.raises(FlowFileError, match=r"bad\.yaml:3"):
        load_catalog([path])


def test_catalog_json_describes_steps_and_faults():
    listing = catalog_to_json(builtin_flows())["flows"]
    by_name = {f["name"]: f for f in listing}
    assert [f["name"] for f in listing] == sorted(by_name)
    assert by_name["rate-limited"]["steps"][0]["fault"] == "http 429"
    assert by_name["tool-then-answer"]["steps"][0]["tool_calls"][0]["name"] == "read"
    assert by_name["scaffold-split"]["steps"][0]["chunking"] == "char"
    assert by_name["scaffold-recover"]["canary"] == "sgcanary-recover-41f7"
