"""The flows a server knows: the built-ins, user flow files, flows added at run time; listing.

User files load after the built-ins, so a user flow with a built-in's name (`default`)
replaces it.

Deliberate choices:
- A flow added at run time under a name already taken is accepted only when identical,
  else the request is refused as a conflict: a kit run twice adds its flows once, and two
  kits that disagree fail loudly instead of changing each other's flows mid-run.
- A request is all or nothing: every flow is checked before any is added.
- Runtime flows are bounded in number and in text (aliases may not expand past the body
  limit), so a small body cannot become a huge catalog.
- The built-in file is parsed once per process (its flows are immutable values); each
  call still gets a dict of its own to add to. A process that starts several mocks, or a
  test collection that asks for the built-ins in every module, read the YAML once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mock_llm.flows.flow_file import load_flow_file, parse_flows
from mock_llm.flows.model import Expect, Flow, RecordedChunk, Step, describe_fault

BUILTIN_RESOURCE = "builtin_flows.yaml"
DEFAULT_FLOW = "default"
RUNTIME_SOURCE = "runtime"
DEFAULT_MAX_RUNTIME_FLOWS = 200


def builtin_flows() -> dict[str, Flow]:
    """The built-in flows by name, in the file's order (a new dict each call)."""
    return dict(_parsed_builtins())


@functools.cache
def _parsed_builtins() -> Mapping[str, Flow]:
    text = resources.files("mock_llm.flows").joinpath(BUILTIN_RESOURCE).read_text(encoding="utf-8")
    return MappingProxyType(parse_flows(text, source="builtin"))


def load_catalog(flow_files: Iterable[str | Path] = ()) -> dict[str, Flow]:
    """Built-ins, then each user file in order; raises FlowFileError on the first bad file."""
    flows = builtin_flows()
    for path in flow_files:
        flows.update(load_flow_file(path))
    return flows


class RuntimeFlowsRefused(ValueError):
    """Flows sent at run time that cannot be added; `code` names the reason for machines."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class RuntimeAddition:
    """What adding flows at run time did: the catalog after it, and which names did what."""

    flows: dict[str, Flow]
    added: tuple[str, ...]
    unchanged: tuple[str, ...]


def runtime_count(flows: Mapping[str, Flow]) -> int:
    return sum(1 for flow in flows.values() if flow.source == RUNTIME_SOURCE)


def text_size(flow: Flow) -> int:
    """The characters a flow holds once YAML aliases are expanded (what a listing writes out)."""
    size = len(flow.name) + len(flow.description) + len(flow.canary or "")
    if flow.expect is not None:
        size += len(flow.expect.shown)
    for step in flow.steps:
        size += len(step.content) + len(step.reasoning)
        if step.extract is not None:
            size += len(step.extract.fallback) + len(step.extract.preamble)
        size += sum(len(c.name) + len(c.arguments) + len(c.id or "") for c in step.tool_calls)
        size += sum(len(chunk.text) for chunk in step.recorded)
    return size


def add_runtime_flows(
    catalog: Mapping[str, Flow],
    new: Mapping[str, Flow],
    *,
    max_flows: int,
    max_chars: int,
) -> RuntimeAddition:
    """The catalog with `new` added, or RuntimeFlowsRefused; `catalog` is never changed."""
    conflicts = [
        name
        for name, flow in new.items()
        if name in catalog and replace(flow, source=catalog[name].source) != catalog[name]
    ]
    if conflicts:
        where = ", ".join(f"{n!r} (from {catalog[n].source})" for n in conflicts)
        raise RuntimeFlowsRefused(
            409,
            "flow_conflict",
            f"A flow with this name already exists with a different definition: {where}. "
            "Flows added at run time never replace another flow; send the identical "
            "definition (a no-op) or use a new name.",
        )
    added = tuple(name for name in new if name not in catalog)
    chars = sum(text_size(new[name]) for name in added)
    if chars > max_chars:
        raise RuntimeFlowsRefused(
            413,
            "flows_too_large",
            f"The flows hold {chars} characters once YAML aliases are expanded, "
            f"more than the limit of {max_chars}.",
        )
    total = runtime_count(catalog) + len(added)
    if total > max_flows:
        raise RuntimeFlowsRefused(
            409,
            "runtime_flow_limit",
            f"Adding {len(added)} flows would make {total} flows added at run time; "
            f"the limit is {max_flows}.",
        )
    flows = dict(catalog)
    flows.update({name: replace(new[name], source=RUNTIME_SOURCE) for name in added})
    return RuntimeAddition(flows, added, tuple(name for name in new if name in catalog))


def expect_to_json(expect: Expect | None) -> dict[str, Any] | None:
    return asdict(expect) if expect is not None else None


def step_to_json(step: Step) -> dict[str, Any]:
    return {
        "content": step.content,
        "reasoning": step.reasoning,
        "tool_calls": [asdict(call) for call in step.tool_calls],
        "finish_reason": step.resolved_finish_reason,
        "chunking": "recorded" if step.recorded else step.chunking.describe(),
        "delay_ms": step.delay_ms,
        "ttft_ms": step.ttft_ms,
        "reasoning_field": step.reasoning_field,
        "dialect": step.dialect,
        "fault": describe_fault(step.fault) if step.fault is not None else None,
        "extract": asdict(step.extract) if step.extract is not None else None,
        "chunks": [recorded_chunk_to_json(chunk) for chunk in step.recorded],
    }


def recorded_chunk_to_json(chunk: RecordedChunk) -> dict[str, Any]:
    """A recorded chunk as a flow file writes it: `{content: TEXT, after_ms: N}`,
    `{reasoning: ...}` or `{call: INDEX, arguments: TEXT, after_ms: N}`."""
    if chunk.part == "call":
        return {"call": chunk.call, "arguments": chunk.text, "after_ms": chunk.after_ms}
    return {chunk.part: chunk.text, "after_ms": chunk.after_ms}


def catalog_to_json(flows: Mapping[str, Flow]) -> dict[str, Any]:
    return {
        "flows": [
            {
                "name": flow.name,
                "description": flow.description,
                "canary": flow.canary,
                "source": flow.source,
                "expect": expect_to_json(flow.expect),
                "family": flow.family,
                "written_by": list(flow.written_by),
                "by_family": {family: expect_to_json(want) for family, want in flow.by_family},
                "elsewhere": expect_to_json(flow.elsewhere),
                "steps": [step_to_json(step) for step in flow.steps],
            }
            for flow in sorted(flows.values(), key=lambda f: f.name)
        ]
    }
