"""Keep secrets out of a recording: replace what matches by `[REDACTED]`. Pure.

A `Redactor` holds regular expressions (`--redact REGEX`) and literal secrets (the
recorder adds the request's Authorization and API-key values, in case an upstream echoes
one) and is applied to every text a recorded step holds and to the flow's description.

Deliberate choices:
- Matches are found in the original text and overlapping or adjacent ones merged, so each
  span becomes one `[REDACTED]`; an empty match redacts nothing.
- A step's chunks are redacted as the text they join into, so a secret cut across chunks
  is still found; the replacement comes with the chunk the secret began in, and a later
  chunk holding only the rest arrives empty, keeping its place and gap.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from mock_llm.flows.model import (
    ErrorEventFault,
    Fault,
    HttpFault,
    MalformedFault,
    RecordedChunk,
    Step,
)

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 6
"""Shorter header values are not redacted as literals: `x` would redact every x."""


class RedactionError(ValueError):
    """A `--redact` pattern that cannot be used; the message says which and why."""


def compile_patterns(patterns: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    """The patterns compiled, or RedactionError naming the first bad one."""
    compiled: list[re.Pattern[str]] = []
    for pattern in patterns:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise RedactionError(f"{pattern!r} is not a valid regular expression: {exc}") from exc
        if regex.fullmatch(""):
            raise RedactionError(f"{pattern!r} matches the empty text, so it would match anywhere")
        compiled.append(regex)
    return tuple(compiled)


@dataclass(frozen=True)
class Redactor:
    patterns: tuple[re.Pattern[str], ...] = ()
    literals: tuple[str, ...] = ()

    def with_secrets(self, secrets: Iterable[str]) -> Redactor:
        """This redactor, also redacting each secret (of MIN_SECRET_CHARS or more) as is."""
        kept = tuple(s for s in secrets if len(s) >= MIN_SECRET_CHARS and s not in self.literals)
        return replace(self, literals=self.literals + kept) if kept else self

    def __bool__(self) -> bool:
        return bool(self.patterns or self.literals)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The merged, non-empty spans to redact, in order."""
        found: list[tuple[int, int]] = []
        for pattern in self.patterns:
            found += [m.span() for m in pattern.finditer(text) if m.end() > m.start()]
        for secret in self.literals:
            start = text.find(secret)
            while start >= 0:
                found.append((start, start + len(secret)))
                start = text.find(secret, start + 1)
        merged: list[tuple[int, int]] = []
        for start, end in sorted(found):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    def text(self, text: str) -> str:
        return "".join(self.pieces([text]))

    def pieces(self, pieces: Sequence[str]) -> list[str]:
        """The pieces of a text, redacted as the text they join into, boundaries mapped."""
        text = "".join(pieces)
        spans = self.spans(text)
        if not spans:
            return list(pieces)
        out: list[str] = []
        pos = 0
        for start, end in spans:
            out += [text[pos:start], REDACTED]
            pos = end
        out.append(text[pos:])
        redacted = "".join(out)
        cuts: list[int] = []
        offset = 0
        for piece in pieces[:-1]:
            offset += len(piece)
            cuts.append(_mapped(offset, spans))
        bounds = [0, *cuts, len(redacted)]
        return [redacted[a:b] for a, b in itertools.pairwise(bounds)]

    def step(self, step: Step) -> Step:
        """`step` with every text it holds redacted (its chunks boundary by boundary)."""
        if not self:
            return step
        fault = _fault(self, step.fault) if step.fault is not None else None
        if not step.recorded:
            calls = tuple(replace(c, arguments=self.text(c.arguments)) for c in step.tool_calls)
            return replace(
                step,
                content=self.text(step.content),
                reasoning=self.text(step.reasoning),
                tool_calls=calls,
                fault=fault,
            )
        chunks = list(step.recorded)
        groups: dict[tuple[str, int | None], list[int]] = {}
        for position, chunk in enumerate(chunks):
            groups.setdefault((chunk.part, chunk.call), []).append(position)
        for positions in groups.values():
            texts = self.pieces([chunks[p].text for p in positions])
            for position, text in zip(positions, texts, strict=True):
                chunks[position] = replace(chunks[position], text=text)
        recorded = tuple(chunks)
        return replace(
            step,
            content=_join(recorded, "content", None),
            reasoning=_join(recorded, "reasoning", None),
            tool_calls=tuple(
                replace(call, arguments=_join(recorded, "call", index))
                for index, call in enumerate(step.tool_calls)
            ),
            fault=fault,
            recorded=recorded,
        )


def _mapped(offset: int, spans: list[tuple[int, int]]) -> int:
    """Where `offset` of the original text lands in the redacted one."""
    shift = 0
    for start, end in spans:
        if offset <= start:
            break
        if offset < end:  # inside the span: to the end of its replacement
            return start + shift + len(REDACTED)
        shift += len(REDACTED) - (end - start)
    return offset + shift


def _join(chunks: tuple[RecordedChunk, ...], part: str, call: int | None) -> str:
    return "".join(c.text for c in chunks if c.part == part and c.call == call)


def _fault(redactor: Redactor, fault: Fault) -> Fault:
    if isinstance(fault, HttpFault | ErrorEventFault):
        return replace(fault, message=redactor.text(fault.message))
    if isinstance(fault, MalformedFault):
        return replace(fault, line=redactor.text(fault.line))
    return fault
