"""Side calls: the extra model calls a chat app makes around a turn, told apart by rules.

A title, tag or follow-up prompt often repeats the user's message, trigger and all, so the
mock would take it for the turn's next request and advance its flow. A rule is a regular
expression searched in the system (or `developer`) messages and the last user message.
Pure: rules in, a verdict out.

Deliberate choices:
- Matching uses the `regex` package with a timeout per match and a budget per request, so
  a backtracking rule slows a request by a bounded amount, never hangs the server. The
  bounds are wall-clock time, so they are generous (a second; a real rule takes
  microseconds): with 50 ms, a match descheduled on a loaded machine gave up, an app's
  title call counted as a turn's request, and a kit verdict changed with the load. A match
  that gives up is logged.
- Compiling is bounded too (`regex` unrolls counted repeats, with no timeout): a rule is
  refused when its length times its repeat counts passes COMPILE_BUDGET. The count is
  rough on purpose and errs one way: a repeat is never missed.
- Rules are capped in size and number; an empty rule (matches all) or a lone surrogate
  (cannot be written back as JSON) is refused. Adding is all or nothing, and a rule
  already present is unchanged, so a kit run twice adds its rules once.
- A side call is journalled under the last keyed trigger of its last user message (a
  title prompt quoting a chat holds the current turn's last), else of its system messages.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from guardrail.json_shapes import is_array, is_object
from mock_llm.flows.trigger import message_text
from servekit.trigger_grammar import TRIGGER

_LOG = logging.getLogger("mock_llm")
SIDE_CALL_FLOW = "side-call"
"""The built-in flow a side call plays (its first step), whatever its text holds."""
MAX_PATTERNS = 32
MAX_PATTERN_CHARS = 500
MAX_BODY_BYTES = 256 * 1024
"""The largest `POST /_mock/side-calls` body (32 rules of 500 characters, JSON-escaped)."""
MATCH_TIMEOUT_S = 1.0
"""How long one rule may search one message's text before it counts as no match."""
MATCH_BUDGET_S = 2.0
"""How long all the matches of one request may take together."""
COMPILE_BUDGET = 100_000
"""The most a rule's length times the product of its repeat counts may be (see above)."""
SYSTEM_ROLES = frozenset({"system", "developer"})
_BRACES = regex.compile(r"\\.|\{([^{}]*)\}", regex.DOTALL)
_COUNT = regex.compile(r"\s*([0-9]*)\s*(?:,\s*[0-9]*\s*)?")
_DIGITS = regex.compile(r"[0-9]+")


class SideCallsRefused(ValueError):
    """Side-call rules that cannot be taken; `code` names the reason for machines."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param


def _invalid(message: str, param: str | None = "patterns") -> SideCallsRefused:
    return SideCallsRefused(400, "invalid_side_calls", f"Bad side-call rules: {message}", param)


@dataclass(frozen=True)
class SideCallRule:
    """One rule: its text and its compiled pattern."""

    pattern: str
    compiled: regex.Pattern[str]


def compile_cost(pattern: str) -> int:
    """The rough compile cost of `pattern`: its length times its repeat counts' product."""
    product = 1
    for match in _BRACES.finditer(pattern):
        inside = match.group(1)
        if inside is None:  # an escaped character
            continue
        count = _COUNT.fullmatch(inside)
        if count is not None:
            least = int(count.group(1) or 0)
        else:  # not a plain repeat: count its largest number, to err on the safe side
            least = max((int(d) for d in _DIGITS.findall(inside)), default=1)
        product *= max(1, least)
        if product > COMPILE_BUDGET:  # no need to multiply out a huge number
            break
    return len(pattern) * product


def compile_rule(pattern: str, param: str = "patterns") -> SideCallRule:
    """`pattern` checked and compiled, or SideCallsRefused (400) naming it (`param` says
    where it was given)."""
    rule = repr(pattern[:80]) + ("..." if len(pattern) > 80 else "")
    if not pattern:
        raise _invalid("a rule is empty; an empty rule would match every request.", param)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise _invalid(
            f"the rule {rule} is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}.",
            param,
        )
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(f"the rule {rule} holds a lone UTF-16 surrogate.", param) from None
    if compile_cost(pattern) > COMPILE_BUDGET:
        raise _invalid(
            f"the rule {rule} repeats too much to compile quickly (its length times the "
            f"product of its repeat counts passes {COMPILE_BUDGET}); use * or + or smaller "
            "counts.",
            param,
        )
    try:
        compiled = regex.compile(pattern)
    except (regex.error, OverflowError, ValueError, RecursionError) as exc:
        raise _invalid(f"the rule {rule} is not a valid regular expression: {exc}", param) from exc
    return SideCallRule(pattern, compiled)


def compile_rules(patterns: Iterable[object]) -> tuple[SideCallRule, ...]:
    """Each pattern checked and compiled, repeats dropped (the first kept), all or nothing.

    Raises SideCallsRefused: 400 naming the first bad pattern by its index, 409 when there
    are more than MAX_PATTERNS distinct ones (checked before anything is compiled).
    """
    first: dict[str, int] = {}
    for index, pattern in enumerate(patterns):
        if not isinstance(pattern, str):
            param = f"patterns[{index}]"
            raise _invalid(
                f"a rule must be a string (a regular expression), not {pattern!r:.60}.", param
            )
        first.setdefault(pattern, index)
    if len(first) > MAX_PATTERNS:
        raise _limit(len(first), len(first))
    return tuple(compile_rule(p, f"patterns[{i}]") for p, i in first.items())


def _limit(adding: int, total: int) -> SideCallsRefused:
    return SideCallsRefused(
        409,
        "side_call_limit",
        f"Adding {adding} side-call rules would make {total}; the limit is {MAX_PATTERNS}.",
        "patterns",
    )


def parse_patterns_body(raw: bytes) -> list[object]:
    """The `patterns` of a `POST /_mock/side-calls` body: `{"patterns": ["...", ...]}`."""
    try:
        decoded: object = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise _invalid(f"the body is not JSON: {exc}", None) from None
    if not is_object(decoded):
        raise _invalid('the body must be a JSON object: {"patterns": ["REGEX", ...]}.', None)
    unknown = sorted(set(decoded) - {"patterns"})
    if unknown:
        raise _invalid(f"unknown key {unknown[0]!r} (expected only 'patterns').", unknown[0])
    patterns = decoded.get("patterns")
    if not is_array(patterns):
        raise _invalid("'patterns' must be a list of regular expressions (strings).")
    return patterns


@dataclass(frozen=True)
class SideCallAddition:
    """What adding rules did: the rules after it, and which patterns did what."""

    rules: SideCallRules
    added: tuple[str, ...]
    unchanged: tuple[str, ...]


@dataclass(frozen=True)
class SideCallRules:
    """The rules in force, in the order they were added."""

    rules: tuple[SideCallRule, ...] = ()

    @classmethod
    def of(cls, patterns: Iterable[object]) -> SideCallRules:
        """Rules from patterns (settings, the command line), or SideCallsRefused."""
        return cls(compile_rules(patterns))

    @property
    def patterns(self) -> tuple[str, ...]:
        return tuple(rule.pattern for rule in self.rules)

    def add(self, new: Sequence[SideCallRule]) -> SideCallAddition:
        """These rules with `new` added, or SideCallsRefused (409) past MAX_PATTERNS."""
        present = set(self.patterns)
        added = tuple(rule for rule in new if rule.pattern not in present)
        total = len(self.rules) + len(added)
        if total > MAX_PATTERNS:
            raise _limit(len(added), total)
        unchanged = tuple(rule.pattern for rule in new if rule.pattern in present)
        return SideCallAddition(
            SideCallRules(self.rules + added), tuple(r.pattern for r in added), unchanged
        )

    def matches(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        timeout_s: float = MATCH_TIMEOUT_S,
        budget_s: float = MATCH_BUDGET_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> bool:
        """Whether a chat request with these messages is a side call.

        A match that times out, and every match once the budget is spent, counts as none.
        """
        if not self.rules:
            return False
        deadline = clock() + budget_s
        for text in side_call_texts(messages):
            for rule in self.rules:
                left = min(timeout_s, deadline - clock())
                if left <= 0:
                    return False
                try:
                    if rule.compiled.search(text, concurrent=True, timeout=left) is not None:
                        return True
                except TimeoutError:
                    _LOG.warning("side-call rule %r gave up on a text after %.2f s", rule.pattern,
                                 left)  # fmt: skip
                    continue
        return False

    def __len__(self) -> int:
        return len(self.rules)


def side_call_texts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The texts rules are matched against: the last user message's, then every system
    (or developer) message's, the last one first."""
    users = [message for message in messages if message.get("role") == "user"]
    texts = [message_text(users[-1].get("content"))] if users else []
    texts += [
        message_text(message.get("content"))
        for message in reversed(messages)
        if message.get("role") in SYSTEM_ROLES
    ]
    return texts


def side_call_key(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The KEY of the last keyed trigger in the last user message, else in the system
    messages (the last first); None when none holds one. Never an error."""
    for text in side_call_texts(messages):
        keys = [match["key"] for match in TRIGGER.finditer(text) if match["key"] is not None]
        if keys:
            return keys[-1]
    return None
