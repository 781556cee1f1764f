from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mock_llm.flows.catalog import (
    RuntimeFlowsRefused,
    add_runtime_flows,
    builtin_flows,
    catalog_to_json,
    load_catalog,
    text_size,
)
from mock_llm.flows.flow_file import FlowFileError, parse_flows

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
    if flow.family is None:
        assert spans
    assert all(flow.canary in span for span in spans)
    assert any(flow.canary in s.content for s in flow.steps)
    assert flow.expect is not None
    assert flow.canary not in flow.expect.shown  # the markup around it is stripped


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


def test_catalog_json_shows_each_flows_expect_block():
    by_name = {f["name"]: f for f in catalog_to_json(builtin_flows())["flows"]}
    assert by_name["scaffold-repeat"]["expect"] == {
        "shown": "",
        "recovery": True,
        "stripped_chars": 192,
        "error": "malformed",
        "requests": 2,
    }
    assert by_name["error-then-ok"]["expect"] is None


def runtime(text: str) -> dict:
    return parse_flows(text, source="runtime")


def add(catalog, new, max_flows: int = 10, max_chars: int = 10_000):
    return add_runtime_flows(catalog, new, max_flows=max_flows, max_chars=max_chars)


def test_runtime_flows_join_the_catalog_with_source_runtime():
    result = add(builtin_flows(), runtime("flows:\n  mine: {steps: [{content: hi}]}\n"))
    assert result.added == ("mine",)
    assert result.flows["mine"].source == "runtime"
    assert set(result.flows) == set(builtin_flows()) | {"mine"}


def test_adding_never_changes_the_catalog_it_was_given():
    catalog = builtin_flows()
    add(catalog, runtime("flows:\n  mine: {steps: [{content: hi}]}\n"))
    assert "mine" not in catalog


def test_an_identical_flow_under_a_taken_name_is_unchanged():
    first = add(builtin_flows(), runtime("flows:\n  mine: {steps: [{content: hi}]}\n"))
    again = add(first.flows, runtime("flows:\n  mine: {steps: [{content: hi}]}\n"))
    assert (again.added, again.unchanged) == ((), ("mine",))
    assert again.flows == first.flows


def test_a_copy_of_a_builtin_is_unchanged_and_stays_builtin():
    copy = replace(builtin_flows()["partial-tail"], source="runtime")
    result = add(builtin_flows(), {"partial-tail": copy})
    assert result.unchanged == ("partial-tail",)
    assert result.flows["partial-tail"].source == "builtin"


def test_a_different_flow_under_a_taken_name_is_a_conflict_naming_its_source():
    with pytest.raises(RuntimeFlowsRefused) as caught:
        add(builtin_flows(), runtime("flows:\n  clean: {steps: [{content: other}]}\n"))
    assert (caught.value.status, caught.value.code) == (409, "flow_conflict")
    assert "'clean' (from builtin)" in caught.value.message


def test_a_request_with_one_conflict_adds_nothing():
    text = "flows:\n  new-one: {steps: [{content: a}]}\n  clean: {steps: [{content: b}]}\n"
    catalog = builtin_flows()
    with pytest.raises(RuntimeFlowsRefused):
        add(catalog, runtime(text))
    assert "new-one" not in catalog


def test_runtime_flows_past_the_limit_are_refused():
    first = add(builtin_flows(), runtime("flows:\n  a: {steps: [{content: a}]}\n"), max_flows=2)
    text = "flows:\n  b: {steps: [{content: b}]}\n  c: {steps: [{content: c}]}\n"
    with pytest.raises(RuntimeFlowsRefused) as caught:
        add(first.flows, runtime(text), max_flows=2)
    assert (caught.value.status, caught.value.code) == (409, "runtime_flow_limit")
    assert "would make 3 flows added at run time; the limit is 2" in caught.value.message


def test_unchanged_flows_do_not_count_against_the_limit():
    text = "flows:\n  a: {steps: [{content: a}]}\n"
    first = add(builtin_flows(), runtime(text), max_flows=1)
    assert add(first.flows, runtime(text), max_flows=1).unchanged == ("a",)


def test_aliases_may_not_expand_past_the_character_limit():
    text = "x-a: &big {content: " + "y" * 100 + "}\nflows:\n  f: {steps: [" + "*big, " * 50 + "]}\n"
    new = runtime(text)
    assert text_size(new["f"]) > len(text)
    with pytest.raises(RuntimeFlowsRefused) as caught:
        add(builtin_flows(), new, max_chars=len(text))
    assert (caught.value.status, caught.value.code) == (413, "flows_too_large")


def test_text_size_counts_every_string_a_listing_writes():
    flow = runtime(
        "flows:\n  ab:\n    description: cd\n    canary: ef\n"
        "    expect: {shown: gh, recovery: false, stripped_chars: 0, error: null, requests: 1}\n"
        "    steps: [{content: ij, reasoning: kl,\n"
        "             tool_calls: [{name: mn, arguments: 'op', id: qr}]}]\n"
    )["ab"]
    assert text_size(flow) == 18
