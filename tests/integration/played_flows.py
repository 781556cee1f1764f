"""The built-in flows a wire-format test plays whole: those whose first step answers.

Shared by the tests of each wire format (chat completions through the proxy, Ollama's API,
the Responses API, the LiteLLM guardrail), so that each is held to every such flow, not to
a sample of them.
"""

from __future__ import annotations

from mock_llm import builtin_flows
from mock_llm.chunking import split
from mock_llm.flows import Step

FLOWS = builtin_flows()
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

ONE_REQUEST_TURNS = sorted(
    name
    for name, flow in FLOWS.items()
    if flow.expect is not None and not flow.steps[0].tool_calls and flow.steps[0].fault is None
)
"""Every built-in flow with an `expect` block whose first step answers without a tool call:
one request, or two with the recovery, is the whole turn."""
