"""The built-in flows a wire-format test plays whole: those whose first step answers.

Shared by the tests of each wire format (chat completions through the proxy, Ollama's API,
the Responses API, Anthropic's Messages API, the LiteLLM guardrail). Over HTTP each plays
SAMPLED: one flow of each outcome class (`outcome`: clean, look-alikes shown, stripped and
shown, recovered once, the malformed-reply error, cut at its length, tool calls, thinking,
a family's markup shown as another model's text...), read from the flows' own data, so a new
kind of flow is sampled as soon as it is built in. Every flow is replayed through each
route's pure code at the unit level (tests/unit/guard/, tests/unit/integrations/,
tests/unit/mock_llm/wire/). `shown_for` and `requests_for` say what one turn of a flow
through a guard gives its client, and `assert_guarded_turn` checks what every route's turn
has in common. Each judges a family flow by MODEL, the model name the tests send, as the
guard's default (`auto`) does (tests/support/families.py).
"""

from __future__ import annotations

import httpx
import pytest

from guardrail.policy import scrub
from guardrail.registries import DEFAULT_REGISTRY
from mock_llm import builtin_flows
from mock_llm.flows.chunking import split
from mock_llm.flows.model import Step

from ...support.families import hidden_canary
from ...support.journal import Entry, settled_journal
from ...support.log_lines import stripped_in_log

FLOWS = builtin_flows()
MODEL = "m"
"""The model name every guard test asks for: LFM2's markup and the special-token profiles."""
MARKERS = ("<|tool_call_start|>", "<|tool_calls|>", "<|tool_call|>")
LONG_S = 2.0  # a step that plays longer than this is read in part, then left


def duration_s(step: Step) -> float:
    chunks = len(split(step.content, step.chunking)) + len(split(step.reasoning, step.chunking))
    return (step.ttft_ms + step.delay_ms * chunks) / 1000


PLAYED = sorted(
    name
    for name, flow in FLOWS.items()
    if flow.steps[0].fault is None and duration_s(flow.steps[0]) <= LONG_S
)
"""Every built-in flow whose first step answers (text, thinking, tool calls, length) in
under LONG_S; `slow` is read in part, the faults have tests of their own."""


def outcome(name: str) -> tuple[object, ...]:
    """What kind of turn the flow's first step makes, through a guard and on the wire, as
    its own data says: its expected error, recovery and stripping; whether a family's
    markup is shown as text for MODEL; tool calls, thinking (with markup or not), the
    finish; and whether its answer is markup-free bytes a guard passes on untouched."""
    flow = FLOWS[name]
    step = flow.steps[0]
    expect = flow.expect_for(MODEL)
    return (
        None if expect is None else expect.error,
        expect is not None and expect.recovery,
        expect is not None and expect.stripped_chars > 0,
        expect is not flow.expect,
        bool(step.tool_calls),
        bool(step.reasoning),
        scrub(step.reasoning, DEFAULT_REGISTRY) != step.reasoning,
        step.resolved_finish_reason,
        "<" not in step.content,
    )


def sample(names: list[str]) -> list[str]:
    """One flow of each outcome class among `names`: the first by name, a flow of no family
    before a family's."""
    chosen: dict[tuple[object, ...], str] = {}
    for name in sorted(names, key=lambda n: (FLOWS[n].family is not None, n)):
        chosen.setdefault(outcome(name), name)
    return sorted(chosen.values())


SAMPLED = sample(PLAYED)
"""One flow of each outcome class of PLAYED: what a route plays over HTTP."""

ONE_REQUEST_TURNS = sorted(
    name
    for name, flow in FLOWS.items()
    if flow.expect is not None and not flow.steps[0].tool_calls and flow.steps[0].fault is None
)
"""Every built-in flow with an `expect` block whose first step answers without a tool call:
one request, or two with the recovery, is the whole turn."""


def shown_for(name: str) -> str | None:
    """What a client must be shown of the flow's first answer through a guard (None: the
    malformed-reply error): its `expect` block's text, or, for a flow without one or whose
    first answer calls a tool, that answer's text filtered."""
    flow = FLOWS[name]
    step = flow.steps[0]
    expect = flow.expect_for(MODEL)
    if expect is None or step.tool_calls:
        return scrub(step.content, DEFAULT_REGISTRY)
    return None if expect.error == "malformed" else expect.shown


def requests_for(name: str) -> int:
    """How many upstream requests the flow's first turn through a guard makes (two with the
    recovery)."""
    expect = FLOWS[name].expect_for(MODEL)
    one_turn = expect is not None and not FLOWS[name].steps[0].tool_calls
    return expect.requests if one_turn and expect is not None else 1


async def assert_guarded_turn(
    http: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
    name: str,
    route: str,
    got: list[str],
) -> list[Entry]:
    """Check what every guarded route's turn of flow `name` has in common: nothing the client
    `got` (as JSON) holds the flow's canary or, outside raw reasoning (G9), a marker; the
    mock got the turn's requests; the proxy's `guard: ROUTE` line counted what the flow
    strips. The turn's journal entries, for the route's own checks of a recovery."""
    step = FLOWS[name].steps[0]
    canary = hidden_canary(FLOWS[name], MODEL)
    assert canary is None or not any(canary in one for one in got)
    if not step.reasoning:  # the reasoning is shown raw (G9), markup and all
        assert not any(marker in one for marker in MARKERS for one in got)
    entries = await settled_journal(http, key, count=requests_for(name))
    assert len(entries) == requests_for(name)
    expect = FLOWS[name].expect_for(MODEL)
    assert stripped_in_log(caplog, route) == [expect.stripped_chars if expect else 0]
    return entries
