"""Play a `ResponsePlan` on the ASGI connection, recording it in its journal entry.

A response is played by our own ASGI callable, not Starlette's StreamingResponse, so the
journal knows exactly how many chunk frames went out and when the client disconnected (a
watcher task listens for `http.disconnect` and cancels the play at once, even in the middle
of a long pause). An `abort` ending returns from the ASGI callable without finishing the
body: uvicorn then closes the connection, which is what a dropped upstream looks like to a
client. uvicorn logs that as an error; `quiet_abort_logs` filters exactly that line.
"""

from __future__ import annotations

import asyncio
import logging

import anyio
from starlette.types import Receive, Scope, Send

from mock_llm.journal.store import JournalEntry
from mock_llm.play.response_plan import FaultFired, Pause, ResponsePlan
from mock_llm.play.response_plan import Send as SendBytes

ABORT_LOG_LINE = "ASGI callable returned without completing response."


class PlayedResponse:
    """An ASGI response that executes a ResponsePlan and records it in a journal entry."""

    def __init__(self, plan: ResponsePlan, entry: JournalEntry) -> None:
        self._plan = plan
        self._entry = entry
        self._started = False
        self._fault_fired = False
        self._disconnected = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The watcher is a bare task cancelled once the plan has played, not a task group:
        # a group (and its cancel, which formats the task) cost a stream more than its bytes.
        playing = anyio.CancelScope()
        watcher = asyncio.ensure_future(self._watch_disconnect(receive, playing))
        with playing:  # entered before the watcher first runs (at the first await below)
            try:
                if self._plan.headers_first:
                    await self._start(send)
                await self._play(send)
            finally:
                watcher.cancel()
        failed = watcher.exception() if watcher.done() and not watcher.cancelled() else None
        if failed is not None:  # receive() raised: as a task group would, re-raise it
            raise failed
        if self._disconnected:
            self._entry.finish("client_disconnected")
            return
        self._entry.finish("fault" if self._fault_fired else "completed")
        if self._plan.ending != "abort":
            await self._start(send)
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _watch_disconnect(self, receive: Receive, scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self._disconnected = True
                scope.cancel()
                return

    async def _start(self, send: Send) -> None:
        if self._started:
            return
        self._started = True
        headers = [(k.encode(), v.encode()) for k, v in self._plan.headers]
        headers.append((b"x-request-id", f"mock-{self._entry.seq}".encode()))
        await send({"type": "http.response.start", "status": self._plan.status, "headers": headers})

    async def _play(self, send: Send) -> None:
        for action in self._plan.actions:
            if isinstance(action, Pause):
                await anyio.sleep(action.seconds)
            elif isinstance(action, FaultFired):
                self._fault_fired = True
            else:
                await self._send_bytes(send, action)

    async def _send_bytes(self, send: Send, action: SendBytes) -> None:
        await self._start(send)
        await send({"type": "http.response.body", "body": action.data, "more_body": True})
        self._entry.note_chunks(action.chunks)


class _QuietAbortFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != ABORT_LOG_LINE


def quiet_abort_logs() -> None:
    """Drop uvicorn's error line for a deliberately aborted response (see module docstring)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietAbortFilter) for f in logger.filters):
        logger.addFilter(_QuietAbortFilter())
