"""The flows a server knows: the built-ins plus any user flow files, and how they are listed.

User files are loaded after the built-ins, so a user flow with a built-in's name replaces
it (`default` in particular, to change the answer given when there is no trigger).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

from mock_llm.flow_file import load_flow_file, parse_flows
from mock_llm.flows import Flow, Step
from mock_llm.response_plan import describe_fault

BUILTIN_RESOURCE = "builtin_flows.yaml"
DEFAULT_FLOW = "default"


def builtin_flows() -> dict[str, Flow]:
    text = resources.files("mock_llm").joinpath(BUILTIN_RESOURCE).read_text(encoding="utf-8")
    return parse_flows(text, source="builtin")


def load_catalog(flow_files: Iterable[str | Path] = ()) -> dict[str, Flow]:
    """Built-ins, then each user file in order; raises FlowFileError on the first bad file."""
    flows = builtin_flows()
    for path in flow_files:
        flows.update(load_flow_file(path))
    return flows


def step_to_json(step: Step) -> dict[str, Any]:
    return {
        "content": step.content,
        "reasoning": step.reasoning,
        "tool_calls": [asdict(call) for call in step.tool_calls],
        "finish_reason": step.resolved_finish_reason,
        "chunking": step.chunking.describe(),
        "delay_ms": step.delay_ms,
        "ttft_ms": step.ttft_ms,
        "reasoning_field": step.reasoning_field,
        "fault": describe_fault(step.fault) if step.fault is not None else None,
    }


def catalog_to_json(flows: Mapping[str, Flow]) -> dict[str, Any]:
    return {
        "flows": [
            {
                "name": flow.name,
                "description": flow.description,
                "canary": flow.canary,
                "source": flow.source,
                "steps": [step_to_json(step) for step in flow.steps],
            }
            for flow in sorted(flows.values(), key=lambda f: f.name)
        ]
    }
