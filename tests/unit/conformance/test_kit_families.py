"""What the kit expects of a family flow, by the model name the app asks for
(conformance.oracle.expected.Expected, the mock's family table), and that its lists of
family flows are the mock's."""

from __future__ import annotations

import pytest

from conformance.oracle.clauses import FAMILY_FLOWS, LOOKALIKE_FLOWS
from conformance.oracle.expected import Expected
from mock_llm import Expect, builtin_flows

STRIPPED = Expect("clean", False, 40, None, 1)
WHOLE = Expect("raw <tool_call>", False, 0, None, 1)
QWEN = Expected(STRIPPED, "cnry", "Qwen", WHOLE, ("Qwen3-Coder", "GLM", "Granite"))


@pytest.mark.parametrize(
    "model", ["qwen3:8b", "Qwen/Qwen3-Coder-30B-A3B-Instruct", "glm-4.6", "granite4:tiny-h"]
)
def test_a_model_of_a_family_that_writes_the_markup_gets_the_flows_expect(model: str):
    assert QWEN.strips_for(model)
    assert QWEN.for_model(model) is QWEN


@pytest.mark.parametrize("model", ["lfm2-1.2b", "gemma3:4b", "unknown", "", None, 7])
def test_any_other_model_gets_the_flows_elsewhere_without_its_canary(model: object):
    assert not QWEN.strips_for(model)
    assert QWEN.for_model(model) == Expected(WHOLE, None)


def test_a_family_flow_without_elsewhere_holds_for_every_model():
    dsml = Expected(STRIPPED, "cnry", "DeepSeek")
    assert dsml.strips_for("lfm2-1.2b")
    assert dsml.for_model("lfm2-1.2b") is dsml


def test_a_flow_with_no_family_holds_for_every_model():
    plain = Expected(WHOLE, None)
    assert plain.for_model("qwen3:8b") is plain


def test_the_kits_family_flows_are_the_mocks():
    flows = builtin_flows()
    assert set(FAMILY_FLOWS) == {name for name, flow in flows.items() if flow.family}


def test_the_kits_look_alike_flows_are_those_that_can_be_text():
    flows = builtin_flows()
    text_somewhere = {
        name for name, flow in flows.items() if flow.elsewhere is not None or name == "echo-call"
    }
    assert set(LOOKALIKE_FLOWS) == text_somewhere


PARTLY = Expect("<seed:tool_call>\n\n</seed:tool_call>", False, 99, None, 1)
SEED = Expected(STRIPPED, "cnry", "Seed-OSS", WHOLE, (), (("Qwen3-Coder", PARTLY),))


def test_a_family_the_flow_names_by_family_gets_that_outcome_and_the_hidden_canary():
    assert not SEED.strips_for("qwen3-coder:30b")  # partly text: G15 judges it
    assert SEED.for_model("qwen3-coder:30b") == Expected(PARTLY, "cnry")


def test_a_model_of_the_flows_own_family_still_gets_its_expect_over_by_family():
    assert SEED.for_model("seed-oss-36b qwen3-coder") is SEED
