"""Write flows as a flow file that reads back to the same flows. Pure.

The recorder writes its recordings with this (`python -m mock_llm record`), and any flow
can be written: `parse_flows(dump_flows(flows))` gives the flows back field for field
(tested with arbitrary text). Only what differs from a default is written.

Text is written for a reader where that is safe, and exactly always: a text with line
breaks as a literal block (`|`), unless YAML would not read that back exactly (trailing
spaces on a line, tabs, control characters), and a text holding a character YAML reads as
a line break even inside quotes (`\\r`, U+0085, U+2028, U+2029) always double-quoted, where
it is written as an escape. Recorded chunks are one line each, as flow mappings
(`- {content: " world", after_ms: 12.5}`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from mock_llm.flows.model import (
    Chunking,
    CutFault,
    Expect,
    Extract,
    Fault,
    Flow,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    StallFault,
    Step,
)

_QUOTE_ALWAYS = ("\r", "\x85", "\u2028", "\u2029")


class _Inline(dict[str, Any]):
    """A mapping written in flow style, on one line: a recorded chunk."""


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style: str | None = None
    if any(char in text for char in _QUOTE_ALWAYS):
        style = '"'
    elif "\n" in text:
        style = "|"  # the emitter falls back to double quotes where a block would not do
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)  # pyright: ignore[reportUnknownMemberType]


def _represent_inline(dumper: yaml.SafeDumper, data: _Inline) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Inline, _represent_inline)


def dump_flows(flows: Iterable[Flow], comment: str = "") -> str:
    """A flow file holding `flows` (in order), after `comment` as `#` lines."""
    document = {"flows": {flow.name: flow_to_data(flow) for flow in flows}}
    text = yaml.dump(  # pyright: ignore[reportUnknownMemberType]
        document,
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=100,
    )
    head = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines())
    return head + text


def flow_to_data(flow: Flow) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if flow.description:
        data["description"] = flow.description
    if flow.canary is not None:
        data["canary"] = flow.canary
    if flow.family is not None:
        data["family"] = flow.family
    if flow.written_by:
        data["written_by"] = list(flow.written_by)
    if flow.expect is not None:
        data["expect"] = _expect(flow.expect)
    if flow.elsewhere is not None:
        data["elsewhere"] = _expect(flow.elsewhere)
    if flow.by_family:
        data["by_family"] = {family: _expect(want) for family, want in flow.by_family}
    data["steps"] = [step_to_data(step) for step in flow.steps]
    return data


def _expect(expect: Expect) -> dict[str, Any]:
    return {
        "shown": expect.shown,
        "recovery": expect.recovery,
        "stripped_chars": expect.stripped_chars,
        "error": expect.error,
        "requests": expect.requests,
    }


def step_to_data(step: Step) -> dict[str, Any]:
    """A step as a flow file writes it; a recorded one with its texts whole and its chunks."""
    data: dict[str, Any] = {}
    if step.reasoning:
        data["reasoning"] = step.reasoning
    if step.content:
        data["content"] = step.content
    if step.tool_calls:
        data["tool_calls"] = [
            {"name": c.name, **({"id": c.id} if c.id is not None else {}), "arguments": c.arguments}
            for c in step.tool_calls
        ]
    if step.finish_reason is not None:
        data["finish_reason"] = step.finish_reason
    if step.reasoning_field is not None:
        data["reasoning_field"] = step.reasoning_field
    if step.dialect is not None:
        data["dialect"] = step.dialect
    if step.chunking != Chunking():
        chunking = step.chunking
        data["chunking"] = chunking.size if chunking.mode == "size" else chunking.mode
    if step.delay_ms:
        data["delay_ms"] = step.delay_ms
    if step.ttft_ms:
        data["ttft_ms"] = step.ttft_ms
    if step.extract is not None:
        data["extract"] = _extract(step.extract)
    if step.fault is not None:
        data["fault"] = _fault(step.fault)
    if step.recorded:
        data["chunks"] = [_chunk(chunk) for chunk in step.recorded]
    return data


def _chunk(chunk: RecordedChunk) -> _Inline:
    if chunk.part == "call":
        data = _Inline(call=chunk.call, arguments=chunk.text)
    else:
        data = _Inline({chunk.part: chunk.text})
    if chunk.after_ms:
        data["after_ms"] = chunk.after_ms
    return data


def _extract(extract: Extract) -> dict[str, Any]:
    data: dict[str, Any] = {
        "sentences": extract.sentences,
        "fallback": extract.fallback,
        "preamble": extract.preamble,
    }
    if extract.read is not None:
        data["read"] = extract.read
    return data


def _fault(fault: Fault) -> dict[str, Any]:
    if isinstance(fault, HttpFault):
        return {
            "kind": "http",
            "status": fault.status,
            "message": fault.message,
            "type": fault.type,
            **({"code": fault.code} if fault.code is not None else {}),
            "retry_after": fault.retry_after,
        }
    if isinstance(fault, CutFault):
        return {"kind": "cut", "after_chunks": fault.after_chunks, "mode": fault.mode}
    if isinstance(fault, StallFault):
        return {"kind": "stall", "after_chunks": fault.after_chunks, "seconds": fault.seconds}
    if isinstance(fault, MalformedFault):
        return {"kind": "malformed", "after_chunks": fault.after_chunks, "line": fault.line}
    data: dict[str, Any] = {
        "kind": "error_event",
        "after_chunks": fault.after_chunks,
        "message": fault.message,
        "type": fault.type,
    }
    if fault.code is not None:
        data["code"] = fault.code
    return data
