"""The agent's round loop: model request, tool calls, tool results, next request, until done.

`run_agent` drives one turn; each round (`_Round`) is one model request, its pieces
re-yielded as they arrive, its tool calls run and appended. With a scaffolding registry
each request's answer text goes through a fresh filter (guardrail.policy); an empty,
stripped round without tool calls gets exactly one recovery, and an empty recovery raises
MalformedReplyError.

Deliberate choices:
- The model is reached only through a `ChatFn`, so tests run the loop on a scripted fake.
- Without a registry every piece passes through as the very object the stream yielded.
- After `max_rounds` one last request goes out with `tools=None`, so a turn always ends
  with an answer attempt; tool calls from a request that offered none are not run.
- Tools run in a worker thread; a cancelled turn waits for a running tool (they are
  bounded) rather than leave a thread behind. A tool that raises is a failed outcome.
- The assistant message never carries the reasoning: some servers reject it (DeepSeek 400).
- The caller's messages are copied, never mutated; the record is updated as things
  happen, so a failed or stopped turn still has accurate counts.
- Each round's stream is closed explicitly, never left for the garbage collector.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio.to_thread

from guardrail.patterns import Registry
from guardrail.policy import (
    RoundFilter,
    needs_recovery,
    recovery_failed,
    strip_warning,
    with_correction,
)
from scaffold_guard.app.errors import LLMError, MalformedReplyError
from scaffold_guard.app.rag.types import (
    AssistantMessage,
    ChatMessage,
    RecoveryNotice,
    RetryNotice,
    RoundEnd,
    StreamPiece,
    ToolCall,
    ToolMessage,
    ToolOutcome,
    ToolSpec,
)

__all__ = [
    "AgentEvent",
    "AgentRecord",
    "ChatFn",
    "ToolEvent",
    "ToolRunner",
    "run_agent",
]

module_log = logging.getLogger(__name__)
"""Where an agent logs when the caller gives it no logger of its own."""

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
    content_chars: int = 0  # answer characters shown (after the guardrail's filter)
    scaffold_stripped: int = 0  # characters the filter took out, over every request
    recoveries: int = 0
    finish_reason: str | None = None  # the last request's (`length`: cut by the token limit)


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


AgentEvent = StreamPiece | RetryNotice | RecoveryNotice | ToolEvent
"""What a turn yields: answer and thinking pieces, notices, and tool events."""


class _Round:
    """One model request: its pieces and retry notices as they come, counted; then its end.

    `pieces()` streams the request (answer text through a fresh filter when there is a
    registry) and keeps its RoundEnd; `end` is that RoundEnd, and a request whose stream
    stopped without one was cut off (an LLMError).
    """

    def __init__(
        self,
        chat: ChatFn,
        messages: list[ChatMessage],
        tools: list[ToolSpec] | None,
        record: AgentRecord,
        registry: Registry | None,
        log: logging.Logger,
    ) -> None:
        self._chat = chat
        self._messages = messages
        self._tools = tools
        self._record = record
        self._filter = RoundFilter(registry) if registry is not None else None
        self._log = log
        self._end: RoundEnd | None = None
        self.content: list[str] = []

    async def pieces(self) -> AsyncGenerator[StreamPiece | RetryNotice, None]:
        record = self._record
        record.rounds += 1
        number = record.rounds
        stream = self._chat(self._messages, self._tools)
        try:
            async with _closing(stream):
                async for item in stream:
                    if isinstance(item, RoundEnd):
                        if self._filter is not None:
                            tail = self._filter.flush()
                            for piece in self._routed(tail):
                                yield piece
                        self._end = item
                        return
                    if isinstance(item, RetryNotice):
                        record.retries += 1
                    elif item.kind == "thinking":
                        record.thinking_chars += len(item.text)  # never filtered (G9)
                    elif self._filter is None:
                        self._shown(item.text)
                    else:
                        for piece in self._routed(self._filter.feed(item.text)):
                            yield piece
                        continue
                    yield item
        finally:
            if self._filter is not None and self._filter.stripped_chars:
                stripped = self._filter.stripped_chars
                record.scaffold_stripped += stripped
                self._log.warning(strip_warning(stripped, number, self._filter.first_span))

    def _routed(self, shown: str) -> list[StreamPiece]:
        """What the filter gave for one piece: the reasoning it routed out of the answer text
        (gpt-oss's analysis channel), as thinking, then the answer text it showed."""
        assert self._filter is not None
        pieces: list[StreamPiece] = []
        if thinking := self._filter.take_reasoning():
            self._record.thinking_chars += len(thinking)
            pieces.append(StreamPiece("thinking", thinking))
        if shown:
            pieces.append(self._shown(shown))
        return pieces

    def _shown(self, text: str) -> StreamPiece:
        """Count answer text that goes out, and make it a piece."""
        self._record.content_chars += len(text)
        self.content.append(text)
        return StreamPiece("content", text)

    @property
    def visible(self) -> bool:
        """Whether the answer shown so far has any non-whitespace text."""
        if self._filter is not None:
            return self._filter.visible
        return any(not text.isspace() for text in self.content)

    @property
    def stripped_chars(self) -> int:
        return self._filter.stripped_chars if self._filter is not None else 0

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


def _run_tool(tools: ToolRunner, call: ToolCall, log: logging.Logger) -> ToolOutcome:
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
    *,
    registry: Registry | None = None,
    log: logging.Logger = module_log,
) -> AsyncGenerator[AgentEvent, None]:
    """Run one turn: pieces, notices and tool events as they happen.

    `tools=None` offers no tools. At most `max_rounds` rounds run tools; then one last
    request is made without tools. `registry` turns the guardrail on (None: answer text
    passes through unfiltered). Strip warnings and tool crashes are logged to `log`.
    Raises LLMError, and MalformedReplyError when the one recovery is empty too.
    """
    conversation = list(messages)
    tool_rounds = 0
    recovering = False
    while True:
        if recovering:  # the one recovery request: corrected, no tools, a fresh filter
            one = _Round(chat, with_correction(conversation), None, record, registry, log)
            offer = None
        else:
            offer = tools if tools is not None and tool_rounds < max_rounds else None
            specs = offer.specs if offer is not None else None
            one = _Round(chat, list(conversation), specs or None, record, registry, log)
        pieces = one.pieces()
        async with _closing(pieces):
            async for item in pieces:
                yield item
        end = one.end
        record.finish_reason = end.finish_reason
        if recovering:
            if recovery_failed(visible=one.visible):
                raise MalformedReplyError()
            return
        if needs_recovery(
            stripped_chars=one.stripped_chars, visible=one.visible, tool_calls=len(end.tool_calls)
        ):
            recovering = True
            record.recoveries += 1
            yield RecoveryNotice()
            continue
        if not end.tool_calls or offer is None:
            return

        tool_rounds += 1
        conversation.append(_assistant_message("".join(one.content), end.tool_calls))
        for call in end.tool_calls:
            outcome = await anyio.to_thread.run_sync(_run_tool, offer, call, log)
            record.tool_calls.append(call)
            path = outcome.path
            if outcome.ok and call.name == READ_TOOL and path and path not in record.notes_read:
                record.notes_read.append(path)
            result: ToolMessage = {"role": "tool", "tool_call_id": call.id, "content": outcome.text}
            conversation.append(result)
            yield ToolEvent(call=call, outcome=outcome)
