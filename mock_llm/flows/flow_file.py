"""Parse and validate flow files (YAML) into `Flow` objects, with the line of every error.

The built-in flows are a flow file too (`builtin_flows.yaml`), so there is one schema.

Deliberate choices:
- Validation walks the YAML node tree, not the loaded objects, so every error names the
  file and line; unknown and duplicate keys are errors, so a fixture typo fails at start,
  not by passing a test for the wrong reason.
- Flows also arrive over HTTP, so nothing may blow up on hostile text: nesting depth,
  plain mapping keys and a node budget for `arguments` stop alias bombs.
- In text that is valid JSON every tab is read as a space (JSON allows tabs, YAML does
  not; a raw tab cannot be inside a JSON string).
- A recorded step's `chunks:` fix its texts and timing, so it may not restate them
  differently or set `chunking`, `delay_ms`, `ttft_ms` or `extract`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import yaml

from mock_llm.flows import yaml_nodes as nodes
from mock_llm.flows.families import FAMILY_NAMES
from mock_llm.flows.flow_text import FlowFileError as FlowFileError
from mock_llm.flows.flow_text import read_flow_text as read_flow_text
from mock_llm.flows.model import (
    DIALECTS,
    EXTRACT_SENTENCES_MAX,
    FINISH_REASONS,
    REASONING_FIELDS,
    Chunking,
    CutFault,
    ErrorEventFault,
    Expect,
    Extract,
    Fault,
    FinishReason,
    Flow,
    HttpFault,
    MalformedFault,
    ReasoningField,
    RecordedChunk,
    StallFault,
    Step,
    ToolCall,
)

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
ARGUMENT_NODES_MAX = 10_000
"""Nodes a tool call's `arguments` mapping may hold, every alias counted where it is used."""
ARGUMENT_DEPTH_MAX = 100

_HTTP_DEFAULTS: Mapping[int, tuple[str, str]] = {
    400: ("Bad request (mock fault).", "invalid_request_error"),
    401: ("Incorrect API key provided (mock fault).", "invalid_request_error"),
    403: ("Forbidden (mock fault).", "invalid_request_error"),
    404: ("Not found (mock fault).", "invalid_request_error"),
    408: ("Request timed out (mock fault).", "timeout"),
    429: ("Rate limit reached (mock fault). Please try again later.", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request (mock fault).", "server_error"),
    502: ("Bad gateway (mock fault).", "server_error"),
    503: ("The engine is currently overloaded (mock fault).", "server_error"),
}


def load_flow_file(path: str | Path) -> dict[str, Flow]:
    """Read and validate one flow file from disk (gzip-compressed when its name ends in .gz)."""
    return parse_flows(read_flow_text(path), source=str(path))


def parse_flows(text: str, source: str) -> dict[str, Flow]:
    """Validate the YAML text of a flow file and return its flows by name."""
    ctx = nodes.Context(source)
    root = nodes.compose(text, source)
    if root is None:
        raise FlowFileError(source, None, "the file is empty; expected a 'flows:' mapping")
    top = nodes.mapping(ctx, root, "the file")
    extensions = {key for key in top if key.startswith("x-")}  # anchors only, as in compose files
    nodes.reject_unknown(ctx, top, {"flows"} | extensions, "the file")
    if "flows" not in top:
        raise ctx.fail(root, "the file is missing 'flows'")
    flows_node = top["flows"]
    entries = nodes.mapping(ctx, flows_node, "'flows'")
    if not entries:
        raise ctx.fail(flows_node, "'flows' is empty; define at least one flow")
    flows: dict[str, Flow] = {}
    for name, node in entries.items():
        if not NAME_PATTERN.fullmatch(name):
            raise ctx.fail(node, f"flow name {name!r} may only use letters, digits, '-' and '_'")
        flows[name] = _flow(ctx, name, node)
    return flows


FLOW_KEYS = {"description", "canary", "steps", "expect", "family", "written_by", "elsewhere",
             "by_family"}  # fmt: skip


def _flow(ctx: nodes.Context, name: str, node: yaml.Node) -> Flow:
    fields = nodes.mapping(
        ctx,
        node,
        f"flow {name!r}",
        required={"steps"},
        allowed=FLOW_KEYS,
    )
    steps_node = fields["steps"]
    if not isinstance(steps_node, yaml.SequenceNode) or not steps_node.value:
        raise ctx.fail(steps_node, f"flow {name!r}: 'steps' must be a non-empty list")
    steps = tuple(
        _step(ctx, f"flow {name!r} step {i}", item)
        for i, item in enumerate(cast(list[yaml.Node], steps_node.value), start=1)
    )
    description = nodes.opt(ctx, fields, "description", nodes.string, "")
    canary = nodes.opt(ctx, fields, "canary", nodes.string, None)
    expect = _expect(ctx, f"flow {name!r} expect", fields["expect"]) if "expect" in fields else None
    family = nodes.opt(ctx, fields, "family", nodes.string, None)
    if family is not None and family not in FAMILY_NAMES:
        raise ctx.fail(fields["family"], _unknown_family(name, family))
    written_by = _written_by(ctx, name, fields, family)
    elsewhere = None
    if "elsewhere" in fields:
        if family is None or expect is None:
            raise ctx.fail(
                fields["elsewhere"],
                f"flow {name!r}: 'elsewhere' is the outcome for other families' models;"
                " it needs 'family' and 'expect'",
            )
        elsewhere = _expect(ctx, f"flow {name!r} elsewhere", fields["elsewhere"])
    return Flow(
        name,
        description,
        steps,
        canary=canary,
        source=ctx.source,
        expect=expect,
        family=family,
        elsewhere=elsewhere,
        written_by=written_by,
        by_family=_by_family(ctx, name, fields, family, written_by),
    )


def _unknown_family(flow: str, family: str) -> str:
    return f"flow {flow!r}: unknown family {family!r}; known: {', '.join(FAMILY_NAMES)}"


def _written_by(
    ctx: nodes.Context, flow: str, fields: nodes.Fields, family: str | None
) -> tuple[str, ...]:
    """The flow's `written_by`: other families' names, for a flow with a `family`."""
    node = _family_field(ctx, flow, fields, family, "written_by")
    if node is None:
        return ()
    if not isinstance(node, yaml.SequenceNode):
        raise ctx.fail(node, f"flow {flow!r}: 'written_by' must be a list of family names")
    names: list[str] = []
    for item in cast(list[yaml.Node], node.value):
        names.append(_other_family(ctx, flow, item, "written_by", (family or "", *names)))
    return tuple(names)


def _by_family(ctx: nodes.Context, flow: str, fields: nodes.Fields, family: str | None,
               written_by: tuple[str, ...]) -> tuple[tuple[str, Expect], ...]:  # fmt: skip
    """The flow's `by_family`: an outcome for the models of each family named, where neither
    `expect` nor `elsewhere` is what a correct page shows for them."""
    node = _family_field(ctx, flow, fields, family, "by_family")
    if node is None:
        return ()
    if not isinstance(node, yaml.MappingNode):
        raise ctx.fail(node, f"flow {flow!r}: 'by_family' maps family names to outcomes")
    outcomes: list[tuple[str, Expect]] = []
    for key, value in cast(list[tuple[yaml.Node, yaml.Node]], node.value):
        taken = (family or "", *written_by, *(named for named, _ in outcomes))
        named = _other_family(ctx, flow, key, "by_family", taken)
        outcomes.append((named, _expect(ctx, f"flow {flow!r} by_family {named}", value)))
    return tuple(outcomes)


def _family_field(
    ctx: nodes.Context, flow: str, fields: nodes.Fields, family: str | None, key: str
) -> yaml.Node | None:
    """A flow's field about other families (None when absent); it needs a `family`."""
    if key not in fields:
        return None
    if family is None:
        raise ctx.fail(fields[key], f"flow {flow!r}: '{key}' needs 'family'")
    return fields[key]


def _other_family(
    ctx: nodes.Context, flow: str, node: yaml.Node, key: str, taken: tuple[str, ...]
) -> str:
    """A known family's name, not one the flow names already."""
    named = nodes.string(ctx, node, key)
    if named not in FAMILY_NAMES:
        raise ctx.fail(node, _unknown_family(flow, named))
    if named in taken:
        raise ctx.fail(node, f"flow {flow!r}: {named!r} named twice in family/written_by/by_family")
    return named


_EXPECT_KEYS = {"shown", "recovery", "stripped_chars", "error", "requests"}


def _expect(ctx: nodes.Context, what: str, node: yaml.Node) -> Expect:
    """Every key is required: a checker relies on the whole outcome, or on none of it."""
    fields = nodes.mapping(ctx, node, what, required=_EXPECT_KEYS, allowed=_EXPECT_KEYS)
    error_node = fields["error"]
    error = nodes.scalar(ctx, error_node, "error")
    if error not in ("malformed", None):
        raise ctx.fail(error_node, f"{what}: 'error' must be malformed or null; got {error!r}")
    requests = nodes.integer(ctx, fields["requests"], "requests")
    if requests < 1:
        raise ctx.fail(fields["requests"], f"{what}: 'requests' must be 1 or more, not {requests}")
    expect = Expect(
        shown=nodes.string(ctx, fields["shown"], "shown"),
        recovery=nodes.boolean(ctx, fields["recovery"], "recovery"),
        stripped_chars=nodes.count(ctx, fields["stripped_chars"], "stripped_chars"),
        error=error,
        requests=requests,
    )
    if expect.recovery and expect.requests < 2:
        raise ctx.fail(
            node, f"{what}: 'recovery: true' needs 'requests' of 2 or more (the recovery is one)"
        )
    if expect.error == "malformed" and not expect.recovery:
        raise ctx.fail(
            node,
            f"{what}: the malformed-reply error follows a failed recovery (G3); "
            "'recovery' must be true",
        )
    return expect


_STEP_KEYS = {
    "content",
    "reasoning",
    "tool_calls",
    "finish_reason",
    "chunking",
    "delay_ms",
    "ttft_ms",
    "reasoning_field",
    "dialect",
    "fault",
    "extract",
    "chunks",
}
_NOT_WITH_CHUNKS = ("chunking", "delay_ms", "ttft_ms", "extract")


def _step(ctx: nodes.Context, what: str, node: yaml.Node) -> Step:
    fields = nodes.mapping(ctx, node, what, allowed=_STEP_KEYS)
    if "extract" in fields and "content" in fields:
        raise ctx.fail(
            fields.key_nodes["extract"],
            f"{what}: 'extract' builds the content from the request; drop 'content'",
        )
    recorded = "chunks" in fields
    for key in _NOT_WITH_CHUNKS:
        if recorded and key in fields:
            raise ctx.fail(
                fields.key_nodes[key],
                f"{what}: {key!r} cannot go with 'chunks': a recorded step streams its "
                "recorded chunks after their recorded gaps",
            )
    calls: list[tuple[ToolCall, yaml.Node | None]] = []
    if "tool_calls" in fields:
        tc_node = fields["tool_calls"]
        if not isinstance(tc_node, yaml.SequenceNode):
            raise ctx.fail(tc_node, f"{what}: 'tool_calls' must be a list")
        calls = [
            _tool_call(ctx, f"{what} tool call {i}", item, arguments_optional=recorded)
            for i, item in enumerate(cast(list[yaml.Node], tc_node.value), start=1)
        ]
    chunks: tuple[RecordedChunk, ...] = ()
    if recorded:
        chunks = _chunks(ctx, what, fields["chunks"], len(calls))
    tool_calls = tuple(
        _joined_call(ctx, f"{what} tool call {i}", call, args_node, chunks, i - 1)
        if recorded
        else call
        for i, (call, args_node) in enumerate(calls, start=1)
    )
    finish: FinishReason | None = nodes.opt(
        ctx, fields, "finish_reason", nodes.choice(FINISH_REASONS), None
    )
    reasoning_field: ReasoningField | None = nodes.opt(
        ctx, fields, "reasoning_field", nodes.choice(REASONING_FIELDS), None
    )
    content = nodes.opt(ctx, fields, "content", nodes.string, "")
    reasoning = nodes.opt(ctx, fields, "reasoning", nodes.string, "")
    if recorded:
        content = _joined(ctx, what, fields, "content", chunks)
        reasoning = _joined(ctx, what, fields, "reasoning", chunks)
    return Step(
        content=content,
        reasoning=reasoning,
        tool_calls=tool_calls,
        finish_reason=finish,
        chunking=nodes.opt(ctx, fields, "chunking", _chunking, Chunking()),
        delay_ms=nodes.opt(ctx, fields, "delay_ms", nodes.non_negative, 0.0),
        ttft_ms=nodes.opt(ctx, fields, "ttft_ms", nodes.non_negative, 0.0),
        reasoning_field=reasoning_field,
        dialect=nodes.opt(ctx, fields, "dialect", nodes.choice(DIALECTS), None),
        fault=nodes.opt(ctx, fields, "fault", _fault, None),
        extract=nodes.opt(ctx, fields, "extract", _extract, None),
        recorded=chunks,
    )


_CHUNK_PARTS = ("reasoning", "content", "call")
_CHUNK_SHAPES = "{reasoning: TEXT}, {content: TEXT} or {call: INDEX, arguments: TEXT}"


def _chunks(
    ctx: nodes.Context, what: str, node: yaml.Node, calls: int
) -> tuple[RecordedChunk, ...]:
    """A recorded step's chunks, in the order the mock streams them: the reasoning's, the
    content's, then each tool call's by index, every call from its opening chunk on."""
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise ctx.fail(node, f"{what}: 'chunks' must be a non-empty list of {_CHUNK_SHAPES}")
    chunks: list[RecordedChunk] = []
    for i, item in enumerate(cast(list[yaml.Node], node.value), start=1):
        where = f"{what} chunk {i}"
        chunk = _chunk(ctx, where, item)
        if chunk.call is not None and chunk.call >= calls:
            have = f"{calls} tool calls (0 to {calls - 1})" if calls else "no tool_calls"
            raise ctx.fail(item, f"{where}: 'call' is {chunk.call} but the step has {have}")
        if chunks and _chunk_rank(chunk) < _chunk_rank(chunks[-1]):
            raise ctx.fail(
                item,
                f"{where}: {_chunk_label(chunk)} cannot follow {_chunk_label(chunks[-1])}: "
                "chunks go reasoning, then content, then each tool call's by index",
            )
        chunks.append(chunk)
    present = {c.call for c in chunks if c.call is not None}
    for call in range(calls):
        if call not in present:
            raise ctx.fail(
                node,
                f"{what}: tool call {call + 1} has no chunk; its first chunk is its opening "
                f"({{call: {call}, arguments: ''}} at least)",
            )
    return tuple(chunks)


def _chunk(ctx: nodes.Context, where: str, node: yaml.Node) -> RecordedChunk:
    fields = nodes.mapping(ctx, node, where, allowed={*_CHUNK_PARTS, "arguments", "after_ms"})
    parts = [key for key in _CHUNK_PARTS if key in fields]
    if len(parts) != 1:
        raise ctx.fail(node, f"{where}: a chunk is one of {_CHUNK_SHAPES}")
    after_ms = nodes.opt(ctx, fields, "after_ms", nodes.non_negative, 0.0)
    if parts[0] == "call":
        if "arguments" not in fields:
            raise ctx.fail(node, f"{where}: a 'call' chunk needs 'arguments' (a string)")
        call = nodes.count(ctx, fields["call"], "call")
        return RecordedChunk(
            "call", nodes.string(ctx, fields["arguments"], "arguments"), call, after_ms
        )
    if "arguments" in fields:
        raise ctx.fail(fields.key_nodes["arguments"], f"{where}: 'arguments' goes with 'call'")
    part = "reasoning" if parts[0] == "reasoning" else "content"
    return RecordedChunk(part, nodes.string(ctx, fields[part], part), None, after_ms)


def _chunk_rank(chunk: RecordedChunk) -> tuple[int, int]:
    return (_CHUNK_PARTS.index(chunk.part), chunk.call or 0)


def _chunk_label(chunk: RecordedChunk) -> str:
    return f"a chunk of tool call {chunk.call}" if chunk.part == "call" else f"a {chunk.part} chunk"


def _joined(
    ctx: nodes.Context, what: str, fields: nodes.Fields, key: str, chunks: tuple[RecordedChunk, ...]
) -> str:
    """The text of a recorded step's `key` part: the join of its chunks, which the step may
    state too (the recorder does, for a reader), but only exactly."""
    joined = "".join(c.text for c in chunks if c.part == key)
    if key in fields and nodes.string(ctx, fields[key], key) != joined:
        raise ctx.fail(
            fields[key], f"{what}: {key!r} must be the join of its chunks (or be left out)"
        )
    return joined


def _joined_call(
    ctx: nodes.Context,
    what: str,
    call: ToolCall,
    args_node: yaml.Node | None,
    chunks: tuple[RecordedChunk, ...],
    index: int,
) -> ToolCall:
    joined = "".join(c.text for c in chunks if c.part == "call" and c.call == index)
    if args_node is None:
        return ToolCall(call.name, joined, call.id)
    if call.arguments != joined:
        raise ctx.fail(
            args_node, f"{what}: 'arguments' must be the join of its chunks (or be left out)"
        )
    return call


def _tool_call(
    ctx: nodes.Context, what: str, node: yaml.Node, *, arguments_optional: bool = False
) -> tuple[ToolCall, yaml.Node | None]:
    """The call, and the node of its `arguments` (None when a recorded step leaves them
    out: they are then the join of the call's chunks)."""
    required = {"name"} if arguments_optional else {"name", "arguments"}
    fields = nodes.mapping(ctx, node, what, required=required, allowed={"name", "arguments", "id"})
    name = nodes.string(ctx, fields["name"], "name")
    call_id = nodes.opt(ctx, fields, "id", nodes.string, None)
    if "arguments" not in fields:
        return ToolCall(name, "", call_id), None
    args_node = fields["arguments"]
    if isinstance(args_node, yaml.MappingNode):
        nodes.check_size(
            ctx,
            args_node,
            f"{what}: 'arguments'",
            max_nodes=ARGUMENT_NODES_MAX,
            max_depth=ARGUMENT_DEPTH_MAX,
        )
        try:
            arguments = json.dumps(nodes.construct(ctx, args_node), ensure_ascii=False)
        except (TypeError, ValueError) as exc:  # a date, bytes, a set...
            raise ctx.fail(args_node, f"{what}: 'arguments' cannot be sent as JSON: {exc}") from exc
    elif isinstance(args_node, yaml.ScalarNode) and isinstance(
        nodes.construct(ctx, args_node), str
    ):
        arguments = cast(str, nodes.construct(ctx, args_node))
    else:
        raise ctx.fail(args_node, f"{what}: 'arguments' must be a mapping or a JSON string")
    arguments = nodes.encodable(ctx, args_node, arguments, "arguments")
    return ToolCall(name=name, arguments=arguments, id=call_id), args_node


_FAULT_KEYS: Mapping[str, set[str]] = {
    "http": {"status", "message", "type", "code", "retry_after"},
    "cut": {"after_chunks", "mode"},
    "stall": {"after_chunks", "seconds"},
    "malformed": {"after_chunks", "line"},
    "error_event": {"after_chunks", "message", "type", "code"},
}


def _fault(ctx: nodes.Context, node: yaml.Node, key: str) -> Fault:
    fields = nodes.mapping(ctx, node, f"'{key}'", required={"kind"})
    kind = nodes.choice(tuple(_FAULT_KEYS))(ctx, fields["kind"], "kind")
    nodes.reject_unknown(ctx, fields, _FAULT_KEYS[kind] | {"kind"}, f"a {kind!r} fault")
    if kind == "http":
        return _http_fault(ctx, node, fields)
    after = nodes.opt(ctx, fields, "after_chunks", nodes.count, 0)
    if kind == "cut":
        mode = nodes.opt(ctx, fields, "mode", nodes.choice(("abort", "eof")), "abort")
        return CutFault(after, mode)
    if kind == "stall":
        if "seconds" not in fields:
            raise ctx.fail(node, "a 'stall' fault needs 'seconds'")
        return StallFault(after, nodes.non_negative(ctx, fields["seconds"], "seconds"))
    if kind == "malformed":
        line = nodes.opt(ctx, fields, "line", nodes.string, MalformedFault(0).line)
        if "\n" in line or "\r" in line:
            raise ctx.fail(fields["line"], "'line' must be a single line")
        return MalformedFault(after, line)
    return ErrorEventFault(
        after,
        message=nodes.opt(
            ctx, fields, "message", nodes.string, "The model stream failed (mock fault)."
        ),
        type=nodes.opt(ctx, fields, "type", nodes.string, "server_error"),
        code=nodes.opt(ctx, fields, "code", nodes.string, None),
    )


def _http_fault(ctx: nodes.Context, node: yaml.Node, fields: nodes.Fields) -> HttpFault:
    if "status" not in fields:
        raise ctx.fail(node, "an 'http' fault needs 'status'")
    status = nodes.integer(ctx, fields["status"], "status")
    if not 400 <= status <= 599:
        raise ctx.fail(fields["status"], f"'status' must be 400 to 599, not {status}")
    default_message, default_type = _HTTP_DEFAULTS.get(
        status, (f"HTTP {status} (mock fault).", "server_error")
    )
    default_retry = 1.0 if status == 429 else None
    return HttpFault(
        status=status,
        message=nodes.opt(ctx, fields, "message", nodes.string, default_message),
        type=nodes.opt(ctx, fields, "type", nodes.string, default_type),
        code=nodes.opt(ctx, fields, "code", nodes.string, None),
        retry_after=nodes.opt(
            ctx, fields, "retry_after", nodes.optional(nodes.non_negative), default_retry
        ),
    )


def _extract(ctx: nodes.Context, node: yaml.Node, key: str) -> Extract:
    """`extract: true`, or a mapping of `sentences` (1 to 10), `fallback`, `preamble` and
    `read` (a tool name)."""
    if isinstance(node, yaml.ScalarNode):
        if nodes.scalar(ctx, node, key) is True:
            return Extract()
        raise ctx.fail(
            node, f"'{key}' must be true or a mapping (sentences, fallback, preamble, read)"
        )
    fields = nodes.mapping(
        ctx, node, f"'{key}'", allowed={"sentences", "fallback", "preamble", "read"}
    )
    spec = Extract()
    sentences = nodes.opt(ctx, fields, "sentences", nodes.integer, spec.sentences)
    if not 1 <= sentences <= EXTRACT_SENTENCES_MAX:
        raise ctx.fail(
            fields["sentences"],
            f"'sentences' must be from 1 to {EXTRACT_SENTENCES_MAX}, not {sentences}",
        )
    return Extract(
        sentences=sentences,
        fallback=nodes.opt(ctx, fields, "fallback", nodes.string, spec.fallback),
        preamble=nodes.opt(ctx, fields, "preamble", nodes.string, spec.preamble),
        read=nodes.opt(ctx, fields, "read", _tool_name, None),
    )


def _tool_name(ctx: nodes.Context, node: yaml.Node, key: str) -> str:
    name = nodes.string(ctx, node, key)
    if not name.strip():
        raise ctx.fail(node, f"'{key}' must name a tool, not be empty")
    return name


def _chunking(ctx: nodes.Context, node: yaml.Node, key: str) -> Chunking:
    value = nodes.scalar(ctx, node, key)
    if value in ("whole", "char", "word"):
        return Chunking(cast(Any, value))
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return Chunking("size", value)
    raise ctx.fail(
        node, f"'{key}' must be whole, char, word or a positive number of characters; got {value!r}"
    )
