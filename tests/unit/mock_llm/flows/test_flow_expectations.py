"""Every built-in `expect` block agrees with an oracle that plays the flow's own content.

The numbers in builtin_flows.yaml were worked out by hand; this file works them out again
with a regex of its own (LFM2's markup: a start marker to its end marker or to the end of
the text, and the two standalone tokens; for a family flow, its family's shape as this file
spells it) and a model of a guarded app's turn taken from the contract: a round with tool
calls is answered by running the tools and asking again (G12), a round whose visible text
is empty because markup was stripped gets one recovery (G2), and an empty recovery ends the
turn in the malformed-reply error (G3). Neither the mock nor the app's filter is consulted,
so a typo in any number of an expect block fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from mock_llm import Expect, Flow, builtin_flows, parse_flows
from mock_llm.flows.model import ExpectedError

FLOWS = builtin_flows()
MARKUP = re.compile(
    r"<\|tool_calls?\|>|<\|tool_call_start\|>.*?(?:<\|tool_call_end\|>|\Z)", re.DOTALL
)
_BAR = "(?:\uff5c|\u2016|\\|){1,2}"  # DSML's bar: fullwidth, double, ASCII
FAMILY_MARKUP = {
    "DeepSeek": re.compile(
        f"<{_BAR}DSML{_BAR}( ?)(?:tool_)?calls>.*?</{_BAR}DSML{_BAR}\\1(?:tool_)?calls>"
        r'|<invoke name="\w+">\n<parameter name=.*?</invoke>'  # DSML with its markers stripped
        "|<\uff5ctool\u2581calls\u2581begin\uff5c>.*?<\uff5ctool\u2581calls\u2581end\uff5c>",  # V3
        re.DOTALL,
    ),
    "Gemma": re.compile(  # a string between <|"|> quotes is data
        r'<\|tool_call>(?:<\|"\|>.*?<\|"\|>|.)*?<tool_call\|>|(?<!\w)call:\w+\{.*?\}', re.DOTALL
    ),
    # a JSON string is read whole (a quoted end marker is data); an opener alone on the last
    # line is a call the end cut off; Qwen3-Next on write Qwen3-Coder's calls too
    "Qwen": re.compile(
        r'<tool_call>(?:"(?:\\.|[^"\\])*"|.)*?</tool_call>|(?m:^)<tool_call>\s*\Z'
        r"|<function=.*?</function>(?:\s*</tool_call>)?",
        re.DOTALL,
    ),
    "Mistral": re.compile(r"\[TOOL_CALLS\]\w+\[ARGS\]\{[^{}]*\}"),
    "Llama": re.compile(
        r'\A\{"name": "\w+", "parameters": \{"\w+": "[^"]*"\}\}\Z'  # JSON, the whole reply
        r"|\A\[\w+\(\w+='[^']*'\)\]\Z"  # a Python list of calls, the whole reply
        r"|<\|python_tag\|>.*?(?:<\|eom_id\|>|\Z)",  # Llama 3.1's tagged call
        re.DOTALL,
    ),
    "Kimi": re.compile(
        r"<\|open\|>tools<\|sep\|>.*?<\|close\|>tools<\|sep\|>"  # K3
        r"|<\|(?:open|close)\|>response<\|sep\|>"  # K3's answer framing
        r"|<\|tool_calls_section_begin\|>.*?<\|tool_calls_section_end\|>",  # K2
        re.DOTALL,
    ),
    "Qwen3-Coder": re.compile(r"<function=.*?</function>(?:\s*</tool_call>)?", re.DOTALL),
    "Seed-OSS": re.compile(r"<seed:tool_call>.*?</seed:tool_call>", re.DOTALL),
    "StepFun": re.compile(r"<function=.*?</function>(?:\s*</tool_call>)?", re.DOTALL),
    # Nemotron Nano 2's own list, and Nemotron 3 Nano's Qwen3-Coder calls
    "Nemotron": re.compile(
        r"<TOOLCALL>.*?</TOOLCALL>|<function=.*?</function>(?:\s*</tool_call>)?", re.DOTALL
    ),
    "GLM": re.compile(r"<arg_key>.*?</arg_value>", re.DOTALL),
    "MiniMax": re.compile(
        r"<minimax:tool_call>.*?</minimax:tool_call>"  # M2
        r"|\]<\]minimax\[>\[<tool_call>.*?\]<\]minimax\[>\[</tool_call>",  # M3
        re.DOTALL,
    ),
    "gpt-oss": re.compile(
        r"\Aanalysis.*?assistantfinal"  # the residue of tokens a server dropped
        r"|assistantcommentary to=[\w.]+ json\{[^{}]*\}|assistantanalysis.*?assistantfinal"
        r"|<\|start\|>assistant to=[\w.]+<\|channel\|>\w+(?: json)?<\|message\|>.*?<\|call\|>"
        r"|(?:<\|start\|>assistant)?<\|channel\|>\w+<\|message\|>|<\|end\|>|<\|return\|>",
        re.DOTALL,
    ),
}
"""Each family flow's shape, spelled here again (not read from the guardrail's registry)."""
REASONING = re.compile(r"(?<=<\|channel\|>analysis<\|message\|>)[^<]*")
"""Harmony's analysis channel: reasoning, taken out of the answer but not stripped (not
counted in G10's figure), for every model (its tokens are special)."""
RESIDUE_REASONING = re.compile(
    r"(?:(?<=\Aanalysis)|(?<=assistantanalysis))(?=[A-Z]).*?(?=assistantfinal)", re.DOTALL
)
"""The same with its tokens dropped by the server: reasoning for a gpt-oss model only."""
SPECIAL_FLOWS = {"deepseek-dsml", "deepseek-dsml-bars", "deepseek-dsml-v41", "kimi-k3-tools",
                 "gemma-tool-call", "harmony-messages", "deepseek-v3-call", "llama-python-tag",
                 "kimi-k2-section"}  # fmt: skip
"""Family flows whose markup is special tokens: stripped whatever the model, so they state
no `elsewhere`."""
FAMILY_FLOWS = {
    "deepseek-dsml", "deepseek-dsml-bars", "gemma-bare-call", "qwen-tool-call",
    "qwen3-coder-bare-function", "seed-oss-tool-call", "nemotron-toolcall",
    "glm-bare-arguments", "minimax-xml-call", "harmony-residue", "mistral-call-then-prose",
    "qwen-quoted-marker", "kimi-k3-tools", "deepseek-dsml-v41", "gemma-tool-call",
    "llama-json-call", "harmony-messages", "deepseek-bare-invoke", "llama-pythonic-call",
    "deepseek-v3-call", "llama-python-tag", "kimi-k2-section", "harmony-call-residue",
    "minimax-m3-call", "qwen-function-tag",
}  # fmt: skip
GUARDRAIL_FLOWS = {
    "clean", "scaffold-recover", "scaffold-split", "scaffold-repeat", "scaffold-mixed",
    "scaffold-standalone", "lookalike", "partial-tail", "unterminated", "thinking-scaffold",
    "tool-with-scaffold", "echo-call", *FAMILY_FLOWS,
}  # fmt: skip
MAX_ROUNDS = 10
DOCS = Path(__file__).parents[4] / "docs" / "mock_llm.md"


@dataclass
class Turn:
    shown: str = ""
    recovery: bool = False
    stripped_chars: int = 0
    error: ExpectedError | None = None
    requests: int = 0


def oracle(flow: Flow, *shapes: re.Pattern[str]) -> Expect:
    """The outcome of one turn of `flow` in a guarded app that runs the tools it is asked to,
    stripping LFM2's markup and the `shapes` given."""
    markup = re.compile("|".join(p.pattern for p in (MARKUP, *shapes)), re.DOTALL)
    turn = Turn()
    for request in range(MAX_ROUNDS):
        step = flow.step_for(request)
        turn.requests += 1
        content = REASONING.sub("", step.content)
        if FAMILY_MARKUP["gpt-oss"] in shapes:
            content = RESIDUE_REASONING.sub("", content)
        stripped = sum(len(m.group()) for m in markup.finditer(content))
        visible = markup.sub("", content)
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
    markup = re.compile("|".join(p.pattern for p in (MARKUP, *FAMILY_MARKUP.values())), re.S)
    for flow in FLOWS.values():
        if any("<|" in step.content or markup.search(step.content) for step in flow.steps):
            assert flow.expect is not None, flow.name


@pytest.mark.parametrize("name", sorted(GUARDRAIL_FLOWS - FAMILY_FLOWS))
def test_expect_block_matches_the_oracle(name: str):
    assert FLOWS[name].expect == oracle(FLOWS[name])


def test_the_family_flows_are_exactly_the_ones_that_name_a_family():
    assert {name for name, flow in FLOWS.items() if flow.family} == FAMILY_FLOWS


@pytest.mark.parametrize("name", sorted(FAMILY_FLOWS))
def test_a_family_flows_expect_block_strips_its_familys_shape(name: str):
    flow = FLOWS[name]
    assert flow.family is not None
    assert flow.expect is not None
    assert flow.expect == oracle(flow, FAMILY_MARKUP[flow.family])
    assert flow.expect.stripped_chars > 0


@pytest.mark.parametrize("name", sorted(FAMILY_FLOWS))
def test_a_family_flow_elsewhere_shows_a_look_alike_shape_whole(name: str):
    flow = FLOWS[name]
    if name in SPECIAL_FLOWS:
        assert flow.elsewhere is None
    else:
        assert flow.elsewhere is not None
        assert flow.elsewhere == oracle(flow)
        assert flow.elsewhere.stripped_chars == 0


@pytest.mark.parametrize("name", sorted(n for n in FAMILY_FLOWS if FLOWS[n].by_family))
def test_a_family_flows_outcome_for_another_family_strips_that_familys_shape(name: str):
    flow = FLOWS[name]
    for family, want in flow.by_family:
        assert want == oracle(flow, FAMILY_MARKUP[family]), family


def test_the_docs_example_flows_expect_block_matches_the_oracle():
    example = DOCS.read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    flow = parse_flows(example, source="docs/mock_llm.md")["my-leak"]
    assert flow.expect == oracle(flow)


def test_the_oracle_strips_a_span_and_both_tokens_and_keeps_look_alikes():
    text = "a<|tool_call|>b<|tool_calls|>c<|tool_call_start|>x<|tool_call_end|>d<|tool_call_end|>"
    assert MARKUP.sub("", text) == "abcd<|tool_call_end|>"
    assert MARKUP.sub("", "e <|tool_call_start|>open\nto the end") == "e "
    assert MARKUP.sub("", "f <|tool_call_st") == "f <|tool_call_st"


def test_the_docs_family_flow_example_matches_the_oracle():
    section = DOCS.read_text(encoding="utf-8").split("### Family flows", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    flow = parse_flows(example, source="docs/mock_llm.md")["qwen-leak"]
    assert flow.expect == oracle(flow, FAMILY_MARKUP["Qwen"])
    assert flow.elsewhere == oracle(flow)
