"""Unit fakes for the turn pipeline: a scripted model (ChatFn) and canned document tools.

The fake ChatFn plays one scripted round per call (the last round repeats, like the mock's
last step) and records the messages and tools of every call, so each test can check what
was sent as well as what came out.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from scaffold_guard.app.rag.tools import NotesTools
from scaffold_guard.app.rag.types import (
    ChatMessage,
    RetryNotice,
    RoundEnd,
    StreamPiece,
    ToolCall,
    ToolOutcome,
    ToolSpec,
)

Item = StreamPiece | RetryNotice | RoundEnd
Script = Sequence[Item | Exception]

SPECS: list[ToolSpec] = [
    {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": {"type": "object"}},
    }
    for name in ("read", "grep", "list")
]
USER: list[ChatMessage] = [
    {"role": "system", "content": "You answer from the notes."},
    {"role": "user", "content": "When do backups run?"},
]


def call(n: int, name: str = "read", path: str = "/homelab/backups.md") -> ToolCall:
    return ToolCall(id=f"call_{n}", name=name, arguments=json.dumps({"path": path}))


def answer(text: str = "Nightly at 02:00.") -> list[Item]:
    return [StreamPiece("content", text), RoundEnd((), "stop")]


def tool_round(*calls: ToolCall, content: str = "") -> list[Item]:
    pieces: list[Item] = [StreamPiece("content", content)] if content else []
    return [*pieces, RoundEnd(calls, "tool_calls")]


@dataclass
class FakeChat:
    """A ChatFn that plays scripted rounds and records each call's messages and tools.

    The record holds plain JSON-like copies, so tests can index any message by any key.
    """

    rounds: list[Script]
    calls: list[tuple[list[dict[str, Any]], list[ToolSpec] | None]] = field(
        default_factory=list[tuple[list[dict[str, Any]], list[ToolSpec] | None]]
    )
    closed: int = 0

    async def __call__(
        self, messages: list[ChatMessage], tools: list[ToolSpec] | None
    ) -> AsyncGenerator[Item, None]:
        sent = cast(list[dict[str, Any]], copy.deepcopy(messages))
        self.calls.append((sent, copy.deepcopy(tools)))
        script = self.rounds[min(len(self.calls), len(self.rounds)) - 1]
        try:
            for item in script:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self.closed += 1

    @property
    def tools_sent(self) -> list[list[ToolSpec] | None]:
        return [tools for _, tools in self.calls]


@dataclass
class FakeTools:
    """A ToolRunner with canned outcomes per tool name (a raising tool raises)."""

    outcomes: dict[str, ToolOutcome] = field(default_factory=dict[str, ToolOutcome])
    specs: list[ToolSpec] = field(default_factory=lambda: list(SPECS))
    ran: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])

    def run(self, name: str, arguments: str) -> ToolOutcome:
        self.ran.append((name, arguments))
        if name == "explode":
            raise RuntimeError("tool bug")
        path = json.loads(arguments).get("path")
        default = ToolOutcome(ok=True, text=f"contents of {path}", path=path)
        return self.outcomes.get(name, default)


def still_clock() -> float:
    """A clock that never moves: a grep budget measured on it is never spent."""
    return 0.0


def patient_tools(root: Path, **options: Any) -> NotesTools:
    """NotesTools whose grep budget no machine load can exhaust.

    For tests whose subject is not the budget: on the real clock a loaded machine can
    spend the 1 s total budget on a big tree and turn a verdict into "search incomplete".
    """
    return NotesTools(
        root, clock=still_clock, grep_file_timeout_s=3600, grep_total_timeout_s=3600, **options
    )
