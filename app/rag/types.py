"""The small value types the parts of a turn hand each other (llm, agent, tools, retrieval).

Kept in one place so that each module can be written and tested on its own against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class StreamPiece:
    """Model output as it arrives: answer text or thinking (reasoning) text."""

    kind: Literal["content", "thinking"]
    text: str


@dataclass(frozen=True)
class RetryNotice:
    """A failed upstream request is about to be retried (only ever before the first piece)."""

    attempt: int  # the attempt about to be made, 2 for the first retry
    delay_s: float
    reason: str  # plain words, e.g. "HTTP 429 rate limited"


@dataclass(frozen=True)
class ToolCall:
    """A structured tool call the model made (arguments as the JSON text it sent)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class RoundEnd:
    """The end of one model request: the tool calls, materialized, and why it stopped."""

    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None


@dataclass(frozen=True)
class ToolOutcome:
    """What running a tool gave: the text for the model, and the note path it touched."""

    ok: bool
    text: str
    path: str | None = None  # virtual path, e.g. /homelab/backups.md


@dataclass(frozen=True)
class Hit:
    """One retrieved note section."""

    path: str  # virtual path, e.g. /homelab/backups.md
    heading: str
    text: str
    score: float  # higher is better
