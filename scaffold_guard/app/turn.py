"""One chat turn, from question to frames: retrieval, prompt, agent, query log, log line.

`run_turn` yields the typed frames of scaffold_guard.app.frames (`start`, `thinking`, `tool`,
`retry`, `delta`, then exactly one of `done` or `error`); the HTTP layer only encodes them. A turn
is grounded when retrieval finds something relevant (the agent gets the document tools) and
deflected otherwise (no tools).

Deliberate choices:
- Everything that can fail runs inside the turn's error handling, the search included, so
  a failure is an `error` frame, never a 200 stream that just stops.
- An AppError shows its own message (safe by construction); anything else shows a
  generic line, its traceback going to the log, never into a frame.
- The query-log row is written before `done`, in a shielded scope, so a page refetching
  on `done` sees it and a leaving client cannot half-write it. Failed turns write no row.
- One deadline covers the whole turn (`Settings.turn_timeout_s`), checked around each
  awaited event, never across a `yield`, so a slow reader never uses it up.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio

from guardrail.patterns import Registry
from guardrail.policy import scrub
from scaffold_guard.app.config import Settings
from scaffold_guard.app.errors import AppError, LLMError, NotesError, TurnTimeoutError
from scaffold_guard.app.frames import ErrorFrame, Frame, Mode
from scaffold_guard.app.rag.agent import AgentRecord, ChatFn, ToolEvent, ToolRunner, run_agent
from scaffold_guard.app.rag.grounding import DEFAULT_GROUNDING_THRESHOLD, is_grounded, sources
from scaffold_guard.app.rag.prompts import build_deflect_prompt, build_grounded_prompt
from scaffold_guard.app.rag.types import ChatMessage, Hit, RecoveryNotice, RetryNotice, StreamPiece
from scaffold_guard.app.storage import QueryLog, ToolChip, TurnRow
from scaffold_guard.app.turn_log import TurnStats, format_turn_line
from servekit.pool import RequestFailed

T = TypeVar("T")

UNEXPECTED_ERROR = "Something went wrong on our side — please try again."
NOTES_UNAVAILABLE = "The notes could not be searched right now — please try again."
NO_MODE = "none"
"""The mode in the log line of a turn that failed before retrieval decided one."""


class NotesSearch(Protocol):
    """Retrieval as a turn uses it (scaffold_guard.app.rag.index.NotesIndex in the app)."""

    def search(self, query: str) -> list[Hit]: ...


@dataclass(frozen=True)
class TurnDeps:
    """What a turn needs; built once per app (see scaffold_guard.app.main)."""

    settings: Settings
    index: NotesSearch
    tools: ToolRunner
    chat: ChatFn
    query_log: QueryLog
    logger: logging.Logger


def new_turn_id() -> str:
    return uuid.uuid4().hex[:16]


def error_detail(exc: Exception) -> str:
    """The copy an `error` frame shows for `exc`: its own message if it is an AppError."""
    return exc.message if isinstance(exc, AppError) else UNEXPECTED_ERROR


def failure_cause(exc: Exception) -> str:
    """The log line's ` cause=<type>`, with ` reason=<label>` for a model error (its own
    label, e.g. `http-503-server-error` or `timed-out`, never upstream or user text), and
    for a request that got no response its error's class and whether its connection was a
    reused one (` error=ServerDisconnectedError reused=true`)."""
    cause = f" cause={type(exc).__name__}"
    if isinstance(exc, LLMError):
        cause += f" reason={_NOT_SLUG.sub('-', exc.reason.lower()).strip('-') or 'unknown'}"
    if isinstance(exc.__cause__, RequestFailed):  # no response: which error, on what connection
        cause += f" {exc.__cause__.cause}"
    return cause


_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def error_frame(turn_id: str, exc: Exception) -> ErrorFrame:
    """The `error` frame for `exc`, with the model service's own message when it sent one."""
    frame: ErrorFrame = {"type": "error", "turn": turn_id, "detail": error_detail(exc)}
    if isinstance(exc, LLMError) and exc.upstream:
        frame["upstream"] = exc.upstream
    return frame


async def _search(deps: TurnDeps, question: str) -> list[Hit]:
    try:
        return await anyio.to_thread.run_sync(deps.index.search, question)
    except Exception as exc:
        raise NotesError(NOTES_UNAVAILABLE) from exc


class _Deadline:
    """The turn's one time budget, applied to each thing the turn waits for."""

    def __init__(self, seconds: float) -> None:
        self.at = asyncio.get_running_loop().time() + seconds

    async def wait(self, awaitable: Awaitable[T]) -> T:
        scope = asyncio.timeout_at(self.at)
        try:
            async with scope:
                return await awaitable
        except TimeoutError as exc:
            if scope.expired():
                raise TurnTimeoutError() from exc
            raise  # a timeout of the model client's own, with its own copy


async def run_turn(
    deps: TurnDeps, turn_id: str, question: str, session: str | None = None
) -> AsyncGenerator[Frame]:
    """The turn's frames. `session` (the page's id for its tab) is kept on the turn's row,
    so the page can show the conversation again after a reload."""
    started = time.perf_counter()
    record = AgentRecord()
    mode: Mode | None = None
    outcome = "abandoned"
    cause = ""
    try:
        deadline = _Deadline(deps.settings.turn_timeout_s)
        hits = await deadline.wait(_search(deps, question))
        threshold = deps.settings.grounding_threshold
        grounded = is_grounded(
            hits, DEFAULT_GROUNDING_THRESHOLD if threshold is None else threshold
        )
        mode = "grounded" if grounded else "deflected"
        yield {"type": "start", "turn": turn_id, "mode": mode}
        tools_on = deps.settings.agent_tools and grounded
        system = build_grounded_prompt(hits, tools=tools_on) if grounded else build_deflect_prompt()
        messages: list[ChatMessage] = [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ]
        answer: list[str] = []
        chips: list[ToolChip] = []
        first_token_ms: int | None = None
        events = run_agent(
            deps.chat,
            deps.tools if tools_on else None,
            messages,
            record,
            max_rounds=deps.settings.agent_max_rounds,
            registry=deps.settings.scaffold_registry,
            log=deps.logger,
        )
        try:
            while True:
                try:
                    event = await deadline.wait(anext(events))
                except StopAsyncIteration:
                    break
                if isinstance(event, StreamPiece):
                    if event.kind == "content":
                        if first_token_ms is None:
                            first_token_ms = _elapsed_ms(started)
                        answer.append(event.text)
                        yield {"type": "delta", "text": event.text}
                    else:
                        yield {"type": "thinking", "text": event.text}
                elif isinstance(event, RecoveryNotice):
                    yield {"type": "retry", "reason": "recovery"}
                elif isinstance(event, RetryNotice):
                    yield {
                        "type": "retry",
                        "attempt": event.attempt,
                        "delay_s": round(event.delay_s, 3),
                        "reason": event.reason,
                    }
                else:
                    chip = _tool_chip(event, deps.settings.scaffold_registry)
                    chips.append(chip)
                    yield {"type": "tool", **chip}
        finally:
            await events.aclose()
        cited = _cited(sources(hits) if grounded else [], record.notes_read)
        row = TurnRow(
            turn_id=turn_id,
            question=question,
            mode=mode,
            answer="".join(answer),
            sources=cited,
            rounds=record.rounds,
            tool_calls=len(record.tool_calls),
            retries=record.retries,
            first_token_ms=first_token_ms,
            total_ms=_elapsed_ms(started),
            session=session,
            tools=chips,
            finish_reason=record.finish_reason,
        )
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(deps.query_log.record, row)
        outcome = "done"
        yield {
            "type": "done",
            "turn": turn_id,
            "mode": mode,
            "sources": cited,
            "finish_reason": record.finish_reason,
        }
    except Exception as exc:
        outcome, cause = "error", failure_cause(exc)
        if not isinstance(exc, AppError):
            deps.logger.error("chat turn=%s failed unexpectedly", turn_id, exc_info=exc)
        yield error_frame(turn_id, exc)
    finally:
        stats = TurnStats(
            turn_id=turn_id,
            mode=mode or NO_MODE,
            rounds=record.rounds,
            tools=len(record.tool_calls),
            thinking_chars=record.thinking_chars,
            content_chars=record.content_chars,
            total_ms=_elapsed_ms(started),
            retries=record.retries,
            scaffold_stripped=record.scaffold_stripped,
        )
        if outcome != "done":
            deps.logger.warning("chat turn=%s outcome=%s%s", turn_id, outcome, cause)
        deps.logger.info(format_turn_line(stats))


def _tool_chip(event: ToolEvent, registry: Registry) -> ToolChip:
    """A tool call as the page shows it (the `tool` frame's fields, and the row's): what the
    model sent is scrubbed of markup like any answer text."""
    path = event.outcome.path
    return {
        "name": scrub(event.call.name, registry),
        "arguments": scrub(event.call.arguments, registry),
        "path": None if path is None else scrub(path, registry),
        "ok": event.outcome.ok,
    }


def _cited(retrieved: list[str], read: list[str]) -> list[str]:
    return list(dict.fromkeys([*retrieved, *read]))


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
