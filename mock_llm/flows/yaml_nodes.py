"""Read a YAML node tree with the line of every error: a toolkit for schemas such as the
flow file's (mock_llm.flows.flow_file). Knows no schema itself.

`compose` parses text into nodes (JSON text may hold tabs, read as spaces; nesting too deep
for the composer is an error), and the readers take one node each: `mapping` (keys plain
strings, no duplicates, unknown and missing keys named), `scalar`, `string` (JSON-style
surrogate pairs joined, a lone one refused), `integer`, `boolean`, `count`, `non_negative`,
`choice`, `optional`. A `Parser` is such a reader; every error is a `FlowFileError` naming
the source and the line. `check_size` bounds a subtree before it is constructed, so an alias
bomb or a recursive anchor is refused instead of expanded.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import yaml

from mock_llm.flows.flow_text import FlowFileError

T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    source: str

    def fail(self, node: yaml.Node, problem: str) -> FlowFileError:
        return FlowFileError(self.source, node.start_mark.line + 1, problem)


def compose(text: str, source: str) -> yaml.Node | None:
    """The node tree of `text`, None when it is empty; invalid YAML is a `FlowFileError`."""
    if "\t" in text and is_json(text):
        text = text.replace("\t", " ")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise FlowFileError(source, line, f"not valid YAML: {exc.problem}") from exc
    except yaml.reader.ReaderError as exc:  # a character YAML refuses; it carries no mark
        line = text.count("\n", 0, exc.position) + 1
        char = exc.character
        code = char if isinstance(char, int) else ord(char)
        problem = f"not valid YAML: character #x{code:04x} is not allowed ({exc.reason})"
        raise FlowFileError(source, line, problem) from exc
    except RecursionError as exc:
        raise FlowFileError(source, None, "not valid YAML here: it nests too deeply") from exc
    return root


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


Parser = Callable[[Context, yaml.Node, str], T]


class Fields(dict[str, yaml.Node]):
    """A mapping's values by key, remembering each key's node for error lines."""

    def __init__(self) -> None:
        super().__init__()
        self.key_nodes: dict[str, yaml.Node] = {}


def check_size(ctx: Context, node: yaml.Node, what: str, *, max_nodes: int, max_depth: int) -> None:
    """Fail when `node` holds too many nodes (aliases counted at every use) or nests too deep.

    Iterative, and stops at the budget, so a recursive anchor or an alias bomb costs at most
    `max_nodes` steps to refuse.
    """
    pending: list[tuple[yaml.Node, int]] = [(node, 1)]
    seen = 0
    while pending:
        current, depth = pending.pop()
        seen += 1
        if seen > max_nodes:
            raise ctx.fail(node, f"{what} holds more than {max_nodes} values")
        if depth > max_depth:
            raise ctx.fail(node, f"{what} nests deeper than {max_depth} levels")
        if isinstance(current, yaml.SequenceNode):
            pending += [(child, depth + 1) for child in cast(list[yaml.Node], current.value)]
        elif isinstance(current, yaml.MappingNode):
            for key, value in cast(list[tuple[yaml.Node, yaml.Node]], current.value):
                pending += [(key, depth + 1), (value, depth + 1)]


def mapping(
    ctx: Context,
    node: yaml.Node,
    what: str,
    required: set[str] | None = None,
    allowed: set[str] | None = None,
) -> Fields:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.fail(node, f"{what} must be a mapping")
    fields = Fields()
    for key_node, value_node in cast(list[tuple[yaml.Node, yaml.Node]], node.value):
        if not isinstance(key_node, yaml.ScalarNode):
            raise ctx.fail(key_node, f"{what}: keys must be strings, not a list or mapping")
        key = construct(ctx, key_node)
        if not isinstance(key, str):
            raise ctx.fail(key_node, f"{what}: keys must be strings, not {key!r}")
        if key in fields:
            raise ctx.fail(key_node, f"{what}: duplicate key {key!r}")
        fields[key] = value_node
        fields.key_nodes[key] = key_node
    if allowed is not None:
        reject_unknown(ctx, fields, allowed, what)
    missing = sorted((required or set()) - fields.keys())
    if missing:
        raise ctx.fail(node, f"{what} is missing {', '.join(repr(m) for m in missing)}")
    return fields


def reject_unknown(ctx: Context, fields: Fields, allowed: set[str], what: str) -> None:
    for key in fields:
        if key not in allowed:
            expected = ", ".join(sorted(allowed))
            raise ctx.fail(
                fields.key_nodes[key], f"{what}: unknown key {key!r} (expected one of: {expected})"
            )


def opt(ctx: Context, fields: Fields, key: str, parse: Parser[T], default: T) -> T:
    if key not in fields:
        return default
    return parse(ctx, fields[key], key)


def construct(ctx: Context, node: yaml.Node) -> Any:
    try:
        return yaml.SafeLoader("").construct_object(node, deep=True)  # type: ignore[no-untyped-call]
    except (yaml.YAMLError, ValueError, TypeError, ArithmeticError) as exc:
        problem = exc.problem if isinstance(exc, yaml.MarkedYAMLError) else exc
        raise ctx.fail(node, f"cannot read this value: {problem}") from exc


def encodable(ctx: Context, node: yaml.Node, value: str, key: str) -> str:
    """`value` with JSON-style surrogate pairs (`\\ud83d\\ude00`) joined; a lone one fails.

    YAML keeps the two halves of an escaped pair apart, and a lone half cannot be sent as
    UTF-8, so it would only fail later, in the middle of a stream.
    """
    try:
        return value.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError as exc:
        raise ctx.fail(
            node, f"'{key}' holds a lone UTF-16 surrogate (an unpaired \\uD8xx)"
        ) from exc


def scalar(ctx: Context, node: yaml.Node, key: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise ctx.fail(node, f"'{key}' must be a single value")
    return construct(ctx, node)


def string(ctx: Context, node: yaml.Node, key: str) -> str:
    value = scalar(ctx, node, key)
    if not isinstance(value, str):
        raise ctx.fail(node, f"'{key}' must be a string, not {value!r}")
    return encodable(ctx, node, value, key)


def integer(ctx: Context, node: yaml.Node, key: str) -> int:
    value = scalar(ctx, node, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.fail(node, f"'{key}' must be a whole number, not {value!r}")
    return value


def boolean(ctx: Context, node: yaml.Node, key: str) -> bool:
    value = scalar(ctx, node, key)
    if not isinstance(value, bool):
        raise ctx.fail(node, f"'{key}' must be true or false, not {value!r}")
    return value


def count(ctx: Context, node: yaml.Node, key: str) -> int:
    value = integer(ctx, node, key)
    if value < 0:
        raise ctx.fail(node, f"'{key}' must be 0 or more, not {value}")
    return value


def non_negative(ctx: Context, node: yaml.Node, key: str) -> float:
    value = scalar(ctx, node, key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ctx.fail(node, f"'{key}' must be a number >= 0, not {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise ctx.fail(node, f"'{key}' must be a finite number >= 0, not {value!r}")
    return float(value)


def optional(parse: Parser[T]) -> Parser[T | None]:
    """`parse`, or None for an explicit null (`retry_after: null`: no Retry-After header)."""

    def parse_or_null(ctx: Context, node: yaml.Node, key: str) -> T | None:
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return None
        return parse(ctx, node, key)

    return parse_or_null


def choice(options: tuple[str, ...]) -> Parser[Any]:
    def parse(ctx: Context, node: yaml.Node, key: str) -> str:
        value = scalar(ctx, node, key)
        if value not in options:
            raise ctx.fail(node, f"'{key}' must be one of {', '.join(options)}; got {value!r}")
        return cast(str, value)

    return parse
