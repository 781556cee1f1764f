"""The agent's round loop: model request, tool calls, tool results, next request, until done.

`run_agent` drives one turn. Each round is one model request (`_Round`); its thinking and
answer pieces and its retry notices are re-yielded as they arrive. A round that ends with
structured tool calls gets them run, the assistant message (with `tool_calls`) and one
`tool` message per call appended, a `ToolEvent` yielded per call, and the loop goes on.
A round without tool calls ends the turn.

Deliberate choices:

- The model is reached only through a `ChatFn` (messages, tools) -> stream, so the same loop
  runs on `chat_stream_retried` (partially applied) and on a scripted fake in tests.
- One round is one `_Round`, a small object whose generator owns the request, its
  bookkeeping and its closing. A guardrail that filters each round's content, and may add
  a recovery request, wraps this one place.
- After `max_rounds` tool rounds, one final request goes out with `tools=None`, so a turn
  always ends with an answer attempt and can never loop. No ToolRunner (the kill switch, or
  a deflected turn) sends `tools=None` on every request. Tool calls that come back from a
  request that offered no tools are not run: the turn ends there.
- Tools run in a worker thread (`anyio.to_thread.run_sync`), since they touch files; a
  cancelled turn waits for a running tool to finish (tools are bounded in time) rather than
  leave a thread behind. A tool that raises becomes a failed outcome for the model (and a
  log line), not a crashed turn.
- The assistant message carries the round's content (None when there was none) but never
  its reasoning: some servers reject reasoning sent back (DeepSeek answers 400).
- The caller's message list is copied, never mutated. The record is updated as things
  happen, so a turn that fails or is stopped still has accurate counts.
- Each round's stream is closed explicitly when the round ends or the consumer stops, so
  an upstream connection is never left for the garbage collector.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio.to_thread

from app.errors import LLMError
from app.rag.types import (
    AssistantMessage,
    ChatMessage,
    RetryNotice,
    RoundEnd,
    StreamPiece,
    ToolCall,
    ToolMessage,
    ToolOutcome,
    ToolSpec,
)

__all__ = [
    "AgentRecord",
    "ChatFn",
    "ToolEvent",
    "ToolRunner",
    "run_agent",
]

log = logging.getLogger(__name__)

ChatFn = Callable[
    [list[ChatMessage], list[ToolSpec] | None],
    AsyncIterator[StreamPiece | RetryNotice | RoundEnd],
]
"""One model request: (messages, tools or None) -> pieces and retry notices, then RoundEnd."""

READ_TOOL = "read"
TOOL_CRASHED = "error: the tool failed unexpectedly"


class ToolRunner(Protocol):
    """The document tools: their OpenAI specs, and a synchronous way to run one call."""

    @property
    def specs(self) -> list[ToolSpec]: ...

    def run(self, name: str, arguments: str) -> ToolOutcome: ...


@dataclass
class AgentRecord:
    """What a turn did, filled in as it happens (the per-turn log line reads it)."""

    rounds: int = 0  # model requests made (a retried request counts once)
    tool_calls: list[ToolCall] = field(default_factory=list[ToolCall])
    notes_read: list[str] = field(default_factory=list[str])  # distinct, in order
    retries: int = 0
    thinking_chars: int = 0
    content_chars: int = 0


@dataclass(frozen=True)
class ToolEvent:
    """A tool call the agent ran, and what came of it (the API's `tool` frame)."""

    call: ToolCall
    outcome: ToolOutcome


@asynccontextmanager
async def _closing(stream: AsyncIterator[Any]) -> AsyncGenerator[None, None]:
    """Close `stream` on the way out if it can be closed (async generators can)."""
    try:
        yield
    finally:
        aclose: Callable[[], Any] | None = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


class _Round:
    """One model request: its pieces and retry notices as they come, counted; then its end.

    `pieces()` streams the request and keeps its RoundEnd; `end` is that RoundEnd, and a
    request whose stream stopped without one was cut off (an LLMError).
    """

    def __init__(
        self,
        chat: ChatFn,
        messages: list[ChatMessage],
        tools: list[ToolSpec] | None,
        record: AgentRecord,
    ) -> None:
        self._chat = chat
        self._messages = messages
        self._tools = tools
        self._record = record
        self._end: RoundEnd | None = None
        self.content: list[str] = []

    async def pieces(self) -> AsyncGenerator[StreamPiece | RetryNotice, None]:
        record = self._record
        record.rounds += 1
        stream = self._chat(self._messages, self._tools)
        async with _closing(stream):
            async for item in stream:
                if isinstance(item, RoundEnd):
                    self._end = item
                    return
                if isinstance(item, RetryNotice):
                    record.retries += 1
                elif item.kind == "thinking":
                    record.thinking_chars += len(item.text)
                else:
                    record.content_chars += len(item.text)
                    self.content.append(item.text)
                yield item

    @property
    def end(self) -> RoundEnd:
        if self._end is None:
            raise LLMError("The model's reply was cut off.", reason="no round end")
        return self._end


def _assistant_message(content: str, calls: tuple[ToolCall, ...]) -> AssistantMessage:
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ],
    }


def _run_tool(tools: ToolRunner, call: ToolCall) -> ToolOutcome:
    try:
        return tools.run(call.name, call.arguments)
    except Exception:
        log.exception("agent: tool %r raised", call.name)
        return ToolOutcome(ok=False, text=TOOL_CRASHED)


async def run_agent(
    chat: ChatFn,
    tools: ToolRunner | None,
    messages: list[ChatMessage],
    record: AgentRecord,
    max_rounds: int,
) -> AsyncGenerator[StreamPiece | RetryNotice | ToolEvent, None]:
    """Run one turn: pieces, retry notices and tool events as they happen. Raises LLMError.

    `tools=None` offers no tools. At most `max_rounds` rounds run tools; then one last
    request is made without tools.
    """
    conversation = list(messages)
    tool_rounds = 0
    while True:
        offer = tools if tools is not None and tool_rounds < max_rounds else None
        specs = offer.specs if offer is not None else None
        one = _Round(chat, list(conversation), specs or None, record)
        pieces = one.pieces()
        async with _closing(pieces):
            async for item in pieces:
                yield item
        end = one.end
        if not end.tool_calls or offer is None:
            return

        tool_rounds += 1
        conversation.append(_assistant_message("".join(one.content), end.tool_calls))
        for call in end.tool_calls:
            outcome = await anyio.to_thread.run_sync(_run_tool, offer, call)
            record.tool_calls.append(call)
            path = outcome.path
            if outcome.ok and call.name == READ_TOOL and path and path not in record.notes_read:
                record.notes_read.append(path)
            result: ToolMessage = {"role": "tool", "tool_call_id": call.id, "content": outcome.text}
            conversation.append(result)
            yield ToolEvent(call=call, outcome=outcome)
