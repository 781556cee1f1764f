"""The HTTP edge of the mock: routes, body limits, and the executor that plays a plan.

Everything decided about a response (which flow, which step, which bytes, which fault)
happens in the pure modules; this one only reads requests, consults them, and executes the
resulting `ResponsePlan` on the ASGI connection while watching for the client going away.

Deliberate choices:
- A response is played by our own ASGI callable, not Starlette's StreamingResponse, so the
  journal knows exactly how many chunk frames went out and when the client disconnected
  (a watcher task listens for `http.disconnect` and cancels the play at once, even in the
  middle of a long pause).
- An `abort` ending returns from the ASGI callable without finishing the body: uvicorn then
  closes the connection, which is what a dropped upstream looks like to a client. uvicorn
  logs that as an error; `quiet_abort_logs` filters exactly that line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mock_llm import wire
from mock_llm.catalog import DEFAULT_FLOW, catalog_to_json
from mock_llm.chat_request import RequestError, parse_chat_request
from mock_llm.flows import Flow, ReasoningField
from mock_llm.journal import DEFAULT_CAPACITY, Journal, JournalEntry
from mock_llm.journal import DEFAULT_MAX_BODY_BYTES as DEFAULT_JOURNAL_BYTES
from mock_llm.response_plan import (
    FaultFired,
    Pause,
    RequestShape,
    ResponsePlan,
    describe_fault,
    plan_response,
)
from mock_llm.response_plan import Send as SendBytes
from mock_llm.trigger import TriggerError, find_trigger, last_user_text
from mock_llm.turns import DEFAULT_QUIET_RESET_S, TurnTracker

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
ABORT_LOG_LINE = "ASGI callable returned without completing response."
MODEL_ID = "mock-llm"


@dataclass(frozen=True)
class MockSettings:
    flows: Mapping[str, Flow]
    reasoning_field: ReasoningField = "reasoning_content"
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    journal_capacity: int = DEFAULT_CAPACITY
    journal_max_body_bytes: int = DEFAULT_JOURNAL_BYTES
    quiet_reset_s: float = DEFAULT_QUIET_RESET_S


@dataclass
class MockState:
    settings: MockSettings
    journal: Journal = field(init=False)
    turns: TurnTracker = field(init=False)

    def __post_init__(self) -> None:
        self.journal = Journal(self.settings.journal_capacity, self.settings.journal_max_body_bytes)
        self.turns = TurnTracker(self.settings.quiet_reset_s)


class _BodyTooLarge(Exception):
    pass


def error_response(
    status: int,
    message: str,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> JSONResponse:
    return JSONResponse(wire.error_body(message, type, code, param), status_code=status)


class PlayedResponse:
    """An ASGI response that executes a ResponsePlan and records it in a journal entry."""

    def __init__(self, plan: ResponsePlan, entry: JournalEntry) -> None:
        self._plan = plan
        self._entry = entry
        self._started = False
        self._fault_fired = False
        self._disconnected = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch_disconnect, receive, group.cancel_scope)
            if self._plan.headers_first:
                await self._start(send)
            await self._play(send)
            group.cancel_scope.cancel()
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


def create_app(settings: MockSettings) -> Starlette:
    """The mock as an ASGI app (serve it with uvicorn, or call it through an ASGI transport)."""
    state = MockState(settings)

    async def chat_completions(request: Request) -> Response | PlayedResponse:
        entry = state.journal.open(request.url.path)
        try:
            raw = await _read_body(request, settings.max_body_bytes)
        except _BodyTooLarge:
            limit = settings.max_body_bytes
            return _reject(entry, 413, f"The request body is larger than {limit} bytes.")
        try:
            chat = parse_chat_request(raw)
        except RequestError as exc:
            preview = _preview(raw)
            state.journal.attach_body(entry, preview, len(preview))
            return _reject(entry, exc.status, exc.message, exc.param)
        state.journal.attach_body(entry, chat.body, len(raw))
        entry.stream = chat.stream
        text = last_user_text(chat.messages)
        try:
            trigger = find_trigger(text)
        except TriggerError as exc:
            return _reject(entry, 400, str(exc), "messages")
        flow_name = trigger.flow if trigger is not None else DEFAULT_FLOW
        entry.key = trigger.key if trigger is not None else None
        flow = settings.flows.get(flow_name)
        if flow is None:
            known = ", ".join(sorted(settings.flows))
            message = f"Unknown mock flow {flow_name!r}. Known flows: {known}."
            return _reject(entry, 400, message, "messages", code="unknown_flow")
        position = state.turns.advance(flow.name, len(flow.steps), entry.key, text)
        step = flow.steps[position.step_index]
        entry.flow = flow.name
        entry.step, entry.steps = position.step_index + 1, len(flow.steps)
        entry.request_in_turn = position.request_number
        if step.fault is not None:
            entry.fault = describe_fault(step.fault)
        meta = wire.CompletionMeta(f"chatcmpl-mock{entry.seq}", int(time.time()), chat.model)
        shape = RequestShape(chat.stream, chat.include_usage, chat.messages)
        plan = plan_response(step, meta, step.reasoning_field or settings.reasoning_field, shape)
        entry.status = plan.status
        return PlayedResponse(plan, entry)

    async def list_requests(request: Request) -> Response:
        key = request.query_params.get("key")
        flow = request.query_params.get("flow")
        entries = state.journal.entries(key=key, flow=flow)
        return JSONResponse(
            {
                "requests": [e.to_json() for e in entries],
                "dropped": state.journal.dropped,
                "capacity": settings.journal_capacity,
            }
        )

    async def clear_requests(request: Request) -> Response:
        state.journal.clear()
        return Response(status_code=204)

    async def list_flows(request: Request) -> Response:
        return JSONResponse(catalog_to_json(settings.flows))

    async def models(request: Request) -> Response:
        model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "mock_llm"}
        return JSONResponse({"object": "list", "data": [model]})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "flows": len(settings.flows)})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error_response(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}")

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/_mock/requests", list_requests, methods=["GET"]),
        Route("/_mock/requests", clear_requests, methods=["DELETE"]),
        Route("/_mock/flows", list_flows, methods=["GET"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app.state.mock = state
    return app


def _reject(
    entry: JournalEntry,
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
) -> Response:
    entry.status = status
    entry.finish("rejected", message)
    return error_response(status, message, param=param, code=code)


def _preview(raw: bytes, limit: int = 2000) -> str:
    return raw[:limit].decode("utf-8", errors="replace")


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise _BodyTooLarge
        parts.append(part)
    return b"".join(parts)


class _QuietAbortFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != ABORT_LOG_LINE


def quiet_abort_logs() -> None:
    """Drop uvicorn's error line for a deliberately aborted response (see module docstring)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietAbortFilter) for f in logger.filters):
        logger.addFilter(_QuietAbortFilter())
