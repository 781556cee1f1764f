"""The small value types the parts of a turn hand each other (llm, agent, tools, retrieval).

Kept in one place so that each module can be written and tested on its own against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict


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
class RecoveryNotice:
    """The guardrail is about to send its one recovery request (the round was scaffolding)."""


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


# --- chat messages and tool specs, as sent upstream (the OpenAI chat-completions shapes) ---


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str


class FunctionCall(TypedDict):
    name: str
    arguments: str  # JSON text, as the model sent it


class ToolCallMessagePart(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


class AssistantMessage(TypedDict):
    """An assistant turn sent back after a tool round: its content (or None) and its calls."""

    role: Literal["assistant"]
    content: str | None
    tool_calls: list[ToolCallMessagePart]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionSpec(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]  # a JSON schema


class ToolSpec(TypedDict):
    """One tool offered to the model (`tools` in the request)."""

    type: Literal["function"]
    function: FunctionSpec
