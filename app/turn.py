"""One chat turn, from question to frames: retrieval, prompt, agent, query log, log line.

`run_turn` yields the frames of DESIGN.md as plain dicts (`start`, `thinking`, `tool`,
`retry`, `delta`, then exactly one of `done` or `error`); the HTTP layer only encodes them.
A turn is grounded when retrieval finds something relevant in the notes (the agent runs
with the document tools) and deflected otherwise (the deflect prompt, no tools).

Deliberate choices:
- The query-log row is written before the `done` frame goes out, inside a shielded scope,
  so a page that refetches the history on `done` sees it, and a client leaving at that
  instant cannot leave a half-finished write. Failed and abandoned turns write no row.
- Errors reach the user as plain copy: an LLMError's own message, or a generic line for
  anything unexpected (whose traceback goes to the log, never into a frame).
- When the client goes away, the framework cancels this generator; the agent's and the LLM
  client's generators are closed on the way out, which closes the upstream stream.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio

from app.config import Settings
from app.rag.agent import AgentRecord, ChatFn, ToolEvent, ToolRunner, run_agent
from app.rag.llm import LLMError
from app.rag.prompts import build_deflect_prompt, build_grounded_prompt
from app.rag.retrieval import DEFAULT_GROUNDING_THRESHOLD, NotesIndex, is_grounded, sources
from app.rag.types import RetryNotice, StreamPiece
from app.storage import QueryLog, TurnRow
from app.turn_log import TurnStats, format_turn_line

UNEXPECTED_ERROR = "Something went wrong on our side — please try again."
Frame = dict[str, Any]


@dataclass(frozen=True)
class TurnDeps:
    """What a turn needs; built once per app (see app.main)."""

    settings: Settings
    index: NotesIndex
    tools: ToolRunner
    chat: ChatFn
    query_log: QueryLog
    logger: logging.Logger


def new_turn_id() -> str:
    return uuid.uuid4().hex[:16]


async def run_turn(deps: TurnDeps, turn_id: str, question: str) -> AsyncIterator[Frame]:
    started = time.perf_counter()
    threshold = deps.settings.grounding_threshold
    hits = await anyio.to_thread.run_sync(deps.index.search, question)
    grounded = is_grounded(hits, DEFAULT_GROUNDING_THRESHOLD if threshold is None else threshold)
    mode = "grounded" if grounded else "deflected"
    record = AgentRecord()
    outcome = "abandoned"
    try:
        yield {"type": "start", "turn": turn_id, "mode": mode}
        tools_on = deps.settings.agent_tools and grounded
        system = build_grounded_prompt(hits, tools=tools_on) if grounded else build_deflect_prompt()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ]
        answer: list[str] = []
        first_token_ms: int | None = None
        events = run_agent(
            deps.chat,
            deps.tools if grounded else None,
            messages,
            record,
            max_rounds=deps.settings.agent_max_rounds,
            tools_enabled=tools_on,
        )
        try:
            async for event in events:
                if isinstance(event, StreamPiece):
                    if event.kind == "content":
                        if first_token_ms is None:
                            first_token_ms = _elapsed_ms(started)
                        answer.append(event.text)
                        yield {"type": "delta", "text": event.text}
                    else:
                        yield {"type": "thinking", "text": event.text}
                elif isinstance(event, RetryNotice):
                    yield {
                        "type": "retry",
                        "attempt": event.attempt,
                        "delay_s": round(event.delay_s, 3),
                        "reason": event.reason,
                    }
                else:
                    yield _tool_frame(event)
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
        )
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(deps.query_log.record, row)
        outcome = "done"
        yield {"type": "done", "turn": turn_id, "mode": mode, "sources": cited}
    except LLMError as exc:
        outcome = "error"
        yield {"type": "error", "turn": turn_id, "detail": exc.message}
    except Exception:
        outcome = "error"
        deps.logger.exception("chat turn=%s failed unexpectedly", turn_id)
        yield {"type": "error", "turn": turn_id, "detail": UNEXPECTED_ERROR}
    finally:
        stats = TurnStats(
            turn_id=turn_id,
            mode=mode,
            rounds=record.rounds,
            tools=len(record.tool_calls),
            thinking_chars=record.thinking_chars,
            content_chars=record.content_chars,
            total_ms=_elapsed_ms(started),
            retries=record.retries,
        )
        if outcome != "done":
            deps.logger.warning("chat turn=%s outcome=%s", turn_id, outcome)
        deps.logger.info(format_turn_line(stats))


def _tool_frame(event: ToolEvent) -> Frame:
    return {
        "type": "tool",
        "name": event.call.name,
        "arguments": event.call.arguments,
        "path": event.outcome.path,
        "ok": event.outcome.ok,
    }


def _cited(retrieved: list[str], read: list[str]) -> list[str]:
    return list(dict.fromkeys([*retrieved, *read]))


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
