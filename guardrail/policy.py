"""The guardrail's policy around the streaming filter: what a round shows, and when to recover.

Pure functions and one per-request object: `RoundFilter` (one request's answer through a
fresh filter, with what it showed and stripped), `needs_recovery` (G2, G12),
`with_correction` and `system_with_correction` (the recovery's messages), `strip_warning`
(the one log line) and `scrub` (a short text, such as a tool call shown on the page).

Deliberate choices:
- "Visible" means what the user would see: only whitespace counts as empty.
- A round that showed nothing but stripped nothing is not a guardrail matter; only
  stripped scaffolding triggers a recovery.
- The correction extends the single system message (one is added when there is none), so
  whatever came last stays last and no provider sees a second system message.
- Nothing here raises: the agent raises MalformedReplyError outside any stream, so the
  transport retry (which only sees LLMError) can never retry it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypeVar, cast

from guardrail.json_shapes import is_array
from guardrail.patterns import Registry
from guardrail.scaffolding import PREVIEW_CHARS, ScaffoldingFilter

__all__ = [
    "CORRECTION_INSTRUCTION",
    "MALFORMED_REPLY",
    "RoundFilter",
    "needs_recovery",
    "recovery_failed",
    "scrub",
    "strip_warning",
    "system_with_correction",
    "with_correction",
]

MALFORMED_REPLY = "The model returned a malformed reply — please try again."
"""What the user is told when the recovery was empty too (contract G3, verbatim)."""

CORRECTION_INSTRUCTION = "Your previous reply contained raw tool-call markup, which is not interpreted here. Answer the user's question directly in plain text — no tool syntax."  # noqa: E501  (one line, verbatim: contract G2)


class RoundFilter:
    """The answer text of one model request, through a fresh scaffolding filter."""

    __slots__ = ("_filter", "visible")

    def __init__(self, registry: Registry) -> None:
        self._filter = ScaffoldingFilter(registry)
        self.visible = False  # has any non-whitespace text been shown?

    def feed(self, text: str) -> str:
        return self._seen(self._filter.feed(text))

    def flush(self) -> str:
        return self._seen(self._filter.flush())

    def _seen(self, shown: str) -> str:
        if not self.visible and shown and not shown.isspace():
            self.visible = True
        return shown

    @property
    def quiet_char(self) -> str | None:
        """ScaffoldingFilter.quiet_char: text without it goes through unchanged."""
        return self._filter.quiet_char

    @property
    def may_turn_quiet(self) -> bool:
        """ScaffoldingFilter.may_turn_quiet."""
        return self._filter.may_turn_quiet

    def take_reasoning(self) -> str:
        """Reasoning the filter routed out of the answer text since the last call (gpt-oss's
        `analysis` channel written into content); '' when there is none."""
        return self._filter.take_reasoning()

    @property
    def stripped_chars(self) -> int:
        return self._filter.stripped_chars

    @property
    def first_span(self) -> str:
        """The first stripped span, cut to its first PREVIEW_CHARS characters ('' if none)."""
        return self._filter.first_span


def needs_recovery(*, stripped_chars: int, visible: bool, tool_calls: int) -> bool:
    """Whether a finished round gets the one recovery request (G2; never with tool calls, G12)."""
    return stripped_chars > 0 and not visible and tool_calls == 0


Message = TypeVar("Message", bound=Mapping[str, Any])


def recovery_failed(*, visible: bool) -> bool:
    """Whether the one recovery came back empty too: the reply is malformed (G3)."""
    return not visible


def with_correction(
    messages: Sequence[Message],
    *,
    roles: Collection[str] = ("system",),
    part_type: str = "text",
) -> list[Message]:
    """`messages` with the correction folded into the first system message (or a new one at
    the front). That message keeps its other fields; text content gets the line after a
    blank line, content given as parts gets one more text part.

    `roles` are the roles that count as the system message and `part_type` the type of the
    added part, for APIs that differ from chat completions (the Responses API's input takes
    a `developer` message too, and `input_text` parts)."""
    out = list(messages)
    for index, message in enumerate(out):
        if message.get("role") in roles:
            content = _with_correction(message.get("content"), part_type)
            out[index] = cast(Message, {**message, "content": content})
            return out
    return [cast(Message, {"role": "system", "content": CORRECTION_INSTRUCTION}), *out]


def system_with_correction(system: object, *, part_type: str = "text") -> object:
    """A request's top-level system prompt (an API that keeps it outside the messages:
    Ollama's /api/generate, Anthropic's Messages API) with the correction folded in, as
    `with_correction` folds it into a system message: text gets the line after a blank
    line, text blocks get one more block; with no system prompt (or one of another shape),
    the correction is the system prompt."""
    if isinstance(system, str) or is_array(system):
        return _with_correction(system, part_type)
    return CORRECTION_INSTRUCTION


def _with_correction(content: object, part_type: str) -> object:
    if isinstance(content, str):
        return f"{content}\n\n{CORRECTION_INSTRUCTION}"
    if is_array(content):
        part = {"type": part_type, "text": CORRECTION_INSTRUCTION}
        return [*content, part]
    return CORRECTION_INSTRUCTION


def scrub(text: str, registry: Registry) -> str:
    """`text` with its scaffolding stripped, as one whole stream."""
    whole = ScaffoldingFilter(registry)
    return whole.feed(text) + whole.flush()


def strip_warning(stripped_chars: int, round_number: int, first_span: str) -> str:
    """`agent: stripped N chars of tool-scaffolding in round R: '<span>'`, on one line.

    The span is cut at PREVIEW_CHARS and written as a Python string literal in single
    quotes, so a newline or a quote in model output can never break or forge a log line.
    """
    return (
        f"agent: stripped {stripped_chars} chars of tool-scaffolding in round {round_number}:"
        f" {_single_quoted(first_span[:PREVIEW_CHARS])}"
    )


def _single_quoted(text: str) -> str:
    # repr() picks double quotes for a string holding ' but no "; with a " appended it must
    # use single quotes (escaping any '), and the appended character is cut off again.
    return repr(text + '"')[:-2] + "'"
