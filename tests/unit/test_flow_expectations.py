"""Every built-in `expect` block agrees with an oracle that plays the flow's own content.

The numbers in builtin_flows.yaml were worked out by hand; this file works them out again
with a regex of its own (LFM2's markup: a start marker to its end marker or to the end of
the text, and the two standalone tokens) and a model of a guarded app's turn taken from
the contract: a round with tool calls is answered by running the tools and asking again
(G12), a round whose visible text is empty because markup was stripped gets one recovery
(G2), and an empty recovery ends the turn in the malformed-reply error (G3). Neither the
mock nor the app's filter is consulted, so a typo in any number of an expect block fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from mock_llm import Expect, Flow, builtin_flows, parse_flows
from mock_llm.flows import ExpectedError

FLOWS = builtin_flows()
MARKUP = re.compile(
    r"<\|tool_calls?\|>|<\|tool_call_start\|>.*?(?:<\|tool_call_end\|>|\Z)", re.DOTALL
)
GUARDRAIL_FLOWS = {
    "clean", "scaffold-recover", "scaffold-split", "scaffold-repeat", "scaffold-mixed",
    "scaffold-standalone", "lookalike", "partial-tail", "unterminated", "thinking-scaffold",
    "tool-with-scaffold",
}  # fmt: skip
MAX_ROUNDS = 10
DOCS = Path(__file__).parents[2] / "docs" / "mock_llm.md"


@dataclass
class Turn:
    shown: str = ""
    recovery: bool = False
    stripped_chars: int = 0
    error: ExpectedError | None = None
    requests: int = 0


def oracle(flow: Flow) -> Expect:
    """The outcome of one turn of `flow` in a guarded app that runs the tools it is asked to."""
    turn = Turn()
    for request in range(MAX_ROUNDS):
        step = flow.step_for(request)
        turn.requests += 1
        stripped = sum(len(m.group()) for m in MARKUP.finditer(step.content))
        visible = MARKUP.sub("", step.content)
        turn.stripped_chars += stripped
        if step.tool_calls:
            turn.shown += visible
            continue
        if stripped and not visible.strip():
            if turn.recovery:
                turn.error = "malformed"
                break
            turn.recovery = True
            continue
        turn.shown += visible
        break
    else:
        pytest.fail(f"{flow.name}: the turn did not end within {MAX_ROUNDS} requests")
    return Expect(turn.shown, turn.recovery, turn.stripped_chars, turn.error, turn.requests)


def test_the_guardrail_flows_are_exactly_the_ones_with_an_expect_block():
    assert {name for name, flow in FLOWS.items() if flow.expect} == GUARDRAIL_FLOWS


def test_every_flow_with_markup_in_its_answer_has_an_expect_block():
    for flow in FLOWS.values():
        if any("<|" in step.content for step in flow.steps):
            assert flow.expect is not None, flow.name


@pytest.mark.parametrize("name", sorted(GUARDRAIL_FLOWS))
def test_expect_block_matches_the_oracle(name: str):
    assert FLOWS[name].expect == oracle(FLOWS[name])


def test_the_docs_example_flows_expect_block_matches_the_oracle():
    example = DOCS.read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    flow = parse_flows(example, source="docs/mock_llm.md")["my-leak"]
    assert flow.expect == oracle(flow)


def test_the_oracle_strips_a_span_and_both_tokens_and_keeps_look_alikes():
    text = "a<|tool_call|>b<|tool_calls|>c<|tool_call_start|>x<|tool_call_end|>d<|tool_call_end|>"
    assert MARKUP.sub("", text) == "abcd<|tool_call_end|>"
    assert MARKUP.sub("", "e <|tool_call_start|>open\nto the end") == "e "
    assert MARKUP.sub("", "f <|tool_call_st") == "f <|tool_call_st"
