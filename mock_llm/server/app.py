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
- The catalog is the server's state, not its settings: flows added at run time
  (`POST /_mock/flows`) join it. Their text is parsed in a worker thread (a large body must
  not stall the streams in flight), then checked and added in one step on the event loop,
  so two requests adding flows never interleave.
- Side calls (`side_calls.py`) are told apart before a trigger is read (`routing.py`):
  they never advance a turn and play the first step of the `side-call` flow. Their rules
  are state too (`POST /_mock/side-calls` adds to them). While there are rules, a request
  is classified in a worker thread: a rule's matches are bounded in time, but they must
  not hold up the streams in flight meanwhile.
- `POST /_mock/flows` and `POST /_mock/side-calls` read their bodies through one helper
  (`_read_bounded`), so both are bounded and refused the same way.
- Every error message is at most `MAX_ERROR_MESSAGE_CHARS` characters (`error_response`):
  some name what the client sent (a role, a flow, a query parameter, the path), and a
  100 KB role or flow name came back whole (issue 12).
- Every response carries the security headers of a data-only server (`API_POLICY`,
  nosniff, no referrer, no framing).
- A journal read with `settle_ms` waits on the journal's change signal (`settle.py`), never
  by polling, and for no longer than its `timeout_ms`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mock_llm.flows.catalog import (
    DEFAULT_MAX_RUNTIME_FLOWS,
    RUNTIME_SOURCE,
    RuntimeFlowsRefused,
    add_runtime_flows,
    catalog_to_json,
    runtime_count,
)
from mock_llm.flows.flow_file import FlowFileError, parse_flows
from mock_llm.flows.model import Flow, ReasoningField
from mock_llm.flows.trigger import TriggerError
from mock_llm.journal.query import QueryError, parse_journal_query
from mock_llm.journal.settle import ChangeSignal, wait_settled
from mock_llm.journal.store import DEFAULT_CAPACITY, DEFAULT_MAX_HELD_BYTES, Journal, JournalEntry
from mock_llm.play.response_plan import (
    Api,
    FaultFired,
    Pause,
    RequestShape,
    ResponsePlan,
    describe_fault,
)
from mock_llm.play.response_plan import Send as SendBytes
from mock_llm.play.routing import Destination, route_request
from mock_llm.play.side_calls import MAX_BODY_BYTES as MAX_SIDE_CALLS_BODY_BYTES
from mock_llm.play.side_calls import (
    MAX_PATTERNS,
    SideCallRules,
    SideCallsRefused,
    compile_rules,
    parse_patterns_body,
)
from mock_llm.play.stream_template import plan_stream_response
from mock_llm.play.turns import DEFAULT_QUIET_RESET_S, TurnTracker
from mock_llm.wire import gemini as gemini_wire
from mock_llm.wire import ollama as ollama_wire
from mock_llm.wire import openai as openai_wire
from mock_llm.wire.anthropic_request import parse_anthropic_request
from mock_llm.wire.chat_request import ChatRequest, RequestError, offered_tools, parse_chat_request
from mock_llm.wire.gemini_request import parse_gemini_request
from mock_llm.wire.responses_request import parse_responses_request
from servekit.error_bodies import anthropic_error_body, openai_error_body
from servekit.json_codec import dumps
from servekit.limits import DEFAULT_MAX_BODY_BYTES, RequestLimits
from servekit.security_headers import SecurityHeaders, security_headers

DEFAULT_MAX_FLOWS_BODY_BYTES = 1024 * 1024
MAX_ERROR_MESSAGE_CHARS = 1000
"""The longest error message: the known flows of a long catalog are cut, never the point."""
ABORT_LOG_LINE = "ASGI callable returned without completing response."
MODEL_ID = "mock-llm"
API_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
"""The mock's Content-Security-Policy: it serves data (JSON, event streams), never a page, so
nothing may load at all and nothing may frame it."""


@dataclass(frozen=True)
class MockSettings:
    flows: Mapping[str, Flow]
    reasoning_field: ReasoningField = "reasoning_content"
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    journal_capacity: int = DEFAULT_CAPACITY
    journal_max_body_bytes: int = DEFAULT_MAX_HELD_BYTES
    quiet_reset_s: float = DEFAULT_QUIET_RESET_S
    max_runtime_flows: int = DEFAULT_MAX_RUNTIME_FLOWS
    max_flows_body_bytes: int = DEFAULT_MAX_FLOWS_BODY_BYTES
    """The largest `POST /_mock/flows` body, and the most text its flows may hold."""
    side_calls: tuple[str, ...] = ()
    """Side-call rules in force from the start (regular expressions, see side_calls.py)."""
    body_timeout_s: float = 10.0
    """How long a request's body may take to arrive whole (else 408): a body shorter than
    its Content-Length was held for over 90 s, waiting for bytes that never came."""
    replay_pacing: float = 1.0
    """What recorded steps' gaps are multiplied by (`--replay-pacing`): 1 plays them as
    recorded, 0 with no pauses. Authored flows keep their `delay_ms` and `ttft_ms`."""


@dataclass
class MockState:
    settings: MockSettings
    flows: dict[str, Flow] = field(init=False)
    journal: Journal = field(init=False)
    journal_changed: ChangeSignal = field(init=False)
    turns: TurnTracker = field(init=False)
    side_calls: SideCallRules = field(init=False)

    def __post_init__(self) -> None:
        self.flows = dict(self.settings.flows)
        self.side_calls = SideCallRules.of(self.settings.side_calls)
        self.journal = Journal(self.settings.journal_capacity, self.settings.journal_max_body_bytes)
        self.journal_changed = ChangeSignal()
        self.journal.on_change = self.journal_changed.pulse
        self.turns = TurnTracker(self.settings.quiet_reset_s)


class _BodyTooLarge(Exception):
    pass


class _BodyTimeout(Exception):
    pass


def error_response(
    status: int,
    message: str,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> JSONResponse:
    """The OpenAI error shape, its message cut at MAX_ERROR_MESSAGE_CHARS."""
    if len(message) > MAX_ERROR_MESSAGE_CHARS:
        message = message[: MAX_ERROR_MESSAGE_CHARS - 1] + "…"
    if param is not None:
        param = _cut(param)
    return JSONResponse(openai_error_body(message, type, code, param), status_code=status)


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


def create_app(settings: MockSettings) -> Starlette:
    """The mock as an ASGI app (serve it with uvicorn, or call it through an ASGI transport)."""
    state = MockState(settings)

    async def chat_completions(request: Request) -> Response | PlayedResponse:
        return await chat(request, "openai")

    async def ollama_chat(request: Request) -> Response | PlayedResponse:
        return await chat(request, "ollama")

    async def responses(request: Request) -> Response | PlayedResponse:
        return await chat(request, "responses")

    async def anthropic_messages(request: Request) -> Response | PlayedResponse:
        return await chat(request, "anthropic")

    async def gemini(request: Request) -> Response | PlayedResponse:
        return await chat(request, "gemini")

    async def chat(request: Request, api: Api) -> Response | PlayedResponse:
        entry = state.journal.open(request.url.path, api)
        try:
            return await answer_chat(request, entry, api)
        except Exception as exc:  # a bug: the entry must still end, or settle reads would hang
            if entry.outcome == "in_progress":
                entry.finish("rejected", f"The mock failed on this request ({type(exc).__name__}).")
            raise

    async def answer_chat(
        request: Request, entry: JournalEntry, api: Api
    ) -> Response | PlayedResponse:
        try:
            raw = await _read_body(request, settings.max_body_bytes, settings.body_timeout_s)
        except _BodyTooLarge:
            limit = settings.max_body_bytes
            return _reject(entry, 413, f"The request body is larger than {limit} bytes.", api=api)
        except _BodyTimeout:
            return _closing(_reject(entry, 408, _body_timeout_message(settings), api=api))
        except ClientDisconnect:  # gone before its body was read: no answer will reach it
            entry.finish("client_disconnected")
            return Response(status_code=400)
        try:
            chat = _parse_request(raw, api, request)
        except RequestError as exc:
            preview = _preview(raw)
            state.journal.attach_body(entry, preview, len(preview))
            return _reject(entry, exc.status, exc.message, exc.param, api=api)
        state.journal.attach_body(entry, chat.body, len(raw))
        entry.stream = chat.stream
        try:
            route = await _route(chat.messages, state.side_calls)
        except TriggerError as exc:
            return _reject(entry, 400, str(exc), _messages_param(api), api=api)
        entry.identify(route.key, route.side_call)
        flow = state.flows.get(route.flow)
        if flow is None:
            known = ", ".join(sorted(state.flows))
            message = f"Unknown mock flow {_cut(route.flow)!r}. Known flows: {known}."
            param = _messages_param(api)
            return _reject(entry, 400, message, param, code="unknown_flow", api=api)
        step_index = 0  # a side call belongs to no turn: it plays the first step
        if not route.side_call:
            position = state.turns.advance(flow.name, len(flow.steps), route.key, route.turn_text)
            step_index = position.step_index
            entry.request_in_turn = position.request_number
        step = flow.steps[step_index]
        entry.flow = flow.name
        entry.step, entry.steps = step_index + 1, len(flow.steps)
        if step.fault is not None:
            entry.fault = describe_fault(step.fault)
        meta = openai_wire.CompletionMeta(f"chatcmpl-mock{entry.seq}", int(time.time()), chat.model)
        tools = offered_tools(chat)
        shape = RequestShape(
            chat.stream, chat.include_usage, chat.messages, tools, api, chat.json_array
        )
        reasoning = step.reasoning_field or settings.reasoning_field
        plan = plan_stream_response(step, meta, reasoning, shape, settings.replay_pacing)
        entry.status = plan.status
        return PlayedResponse(plan, entry)

    async def list_requests(request: Request) -> Response:
        try:
            query = parse_journal_query(request.query_params.multi_items())
        except QueryError as exc:
            return error_response(400, exc.message, param=exc.param)
        settled = None
        if query.settle_ms is not None:
            settled = await wait_settled(state.journal, state.journal_changed, query)
        entries = state.journal.entries(query.key, query.flow, query.side_calls)
        return JSONResponse(state.journal.to_json(entries, settled))

    async def clear_requests(request: Request) -> Response:
        state.journal.clear()
        return Response(status_code=204)

    async def list_flows(request: Request) -> Response:
        return JSONResponse(catalog_to_json(state.flows))

    async def add_flows(request: Request) -> Response:
        limit = settings.max_flows_body_bytes
        raw = await _read_bounded(request, limit, "flows", "flows_too_large", settings)
        if isinstance(raw, Response):
            return raw
        try:
            text = raw.decode("utf-8")
            new = await anyio.to_thread.run_sync(parse_flows, text, RUNTIME_SOURCE)
        except UnicodeDecodeError:
            return error_response(
                400, "Bad flows: the body is not UTF-8 text.", code="invalid_flows"
            )
        except FlowFileError as exc:
            where = f"line {exc.line}: " if exc.line is not None else ""
            return error_response(400, f"Bad flows: {where}{exc.problem}", code="invalid_flows")
        try:
            addition = add_runtime_flows(
                state.flows, new, max_flows=settings.max_runtime_flows, max_chars=limit
            )
        except RuntimeFlowsRefused as exc:
            return error_response(exc.status, exc.message, code=exc.code)
        state.flows = addition.flows
        return JSONResponse(
            {
                "added": list(addition.added),
                "unchanged": list(addition.unchanged),
                "runtime_flows": runtime_count(state.flows),
                "max_runtime_flows": settings.max_runtime_flows,
            }
        )

    async def list_side_calls(request: Request) -> Response:
        return JSONResponse(_side_calls_json(state.side_calls))

    async def add_side_calls(request: Request) -> Response:
        raw = await _read_bounded(
            request, MAX_SIDE_CALLS_BODY_BYTES, "side-call rules", "side_calls_too_large", settings
        )
        if isinstance(raw, Response):
            return raw
        try:
            patterns = parse_patterns_body(raw)
            new = await anyio.to_thread.run_sync(compile_rules, patterns)
            addition = state.side_calls.add(new)
        except SideCallsRefused as exc:
            return error_response(exc.status, exc.message, param=exc.param, code=exc.code)
        state.side_calls = addition.rules
        answer = {"added": list(addition.added), "unchanged": list(addition.unchanged)}
        return JSONResponse({**answer, **_side_calls_json(state.side_calls)})

    async def models(request: Request) -> Response:
        model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "mock_llm"}
        return JSONResponse({"object": "list", "data": [model]})

    async def ollama_tags(request: Request) -> Response:
        return JSONResponse(ollama_wire.tags(MODEL_ID, 0))

    async def ollama_version(request: Request) -> Response:
        return JSONResponse({"version": ollama_wire.VERSION})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "flows": len(state.flows)})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error_response(
            exc.status_code, f"{exc.detail}: {request.method} {_cut(request.url.path)}"
        )

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/responses", responses, methods=["POST"]),
        Route("/v1/messages", anthropic_messages, methods=["POST"]),
        Route("/messages", anthropic_messages, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/api/chat", ollama_chat, methods=["POST"]),
        Route("/v1beta/models/{call}", gemini, methods=["POST"]),
        Route("/v1/models/{call}", gemini, methods=["POST"]),
        Route("/api/tags", ollama_tags, methods=["GET"]),
        Route("/api/version", ollama_version, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/_mock/requests", list_requests, methods=["GET"]),
        Route("/_mock/requests", clear_requests, methods=["DELETE"]),
        Route("/_mock/flows", list_flows, methods=["GET"]),
        Route("/_mock/flows", add_flows, methods=["POST"]),
        Route("/_mock/side-calls", list_side_calls, methods=["GET"]),
        Route("/_mock/side-calls", add_side_calls, methods=["POST"]),
    ]
    headers = Middleware(SecurityHeaders, headers=security_headers(API_POLICY))
    limits = Middleware(RequestLimits, error_body=_limit_error, body_timeout_s=None)
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error},
        middleware=[headers, limits],
    )
    app.state.mock = state
    return app


async def _route(messages: list[dict[str, Any]], rules: SideCallRules) -> Destination:
    """The request's route; classified in a worker thread while there are side-call rules."""
    if not rules:
        return route_request(messages, rules)
    return await anyio.to_thread.run_sync(route_request, messages, rules)


def _parse_request(raw: bytes, api: Api, request: Request) -> ChatRequest:
    """A chat request read in its API's shape (RequestError when it is not one)."""
    if api == "responses":
        return parse_responses_request(raw)
    if api == "anthropic":
        return parse_anthropic_request(raw)
    if api == "gemini":  # the model and the method are in the path
        return parse_gemini_request(
            raw, request.path_params["call"], request.query_params.get("alt")
        )
    return parse_chat_request(raw, stream_default=api == "ollama")


def _messages_param(api: Api) -> str:
    """The parameter that holds the conversation, as an error names it."""
    return {"responses": "input", "gemini": "contents"}.get(api, "messages")


def _side_calls_json(rules: SideCallRules) -> dict[str, Any]:
    return {"patterns": list(rules.patterns), "max_patterns": MAX_PATTERNS}


class JSONResponse(StarletteJSONResponse):
    """Starlette's JSON response, written by `servekit.json_codec.dumps` (a lone surrogate in what a
    client sent, kept in the journal, is written as its escape instead of failing)."""

    def render(self, content: object) -> bytes:
        return dumps(content)


def _reject(
    entry: JournalEntry,
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    api: Api = "openai",
) -> Response:
    """The refusal of a chat request, in its API's error shape (journalled as rejected)."""
    entry.status = status
    entry.finish("rejected", message)
    if api == "ollama":
        return JSONResponse(ollama_wire.error_body(_cut(message, MAX_ERROR_MESSAGE_CHARS)), status)
    if api == "anthropic":
        body = anthropic_error_body(status, _cut(message, MAX_ERROR_MESSAGE_CHARS))
        return JSONResponse(body, status)
    if api == "gemini":
        field = None if param is None else _cut(param)
        body = gemini_wire.error_body(status, _cut(message, MAX_ERROR_MESSAGE_CHARS), field=field)
        return JSONResponse(body, status)
    return error_response(status, message, param=param, code=code)


def _cut(text: str, limit: int = 200) -> str:
    """`text` as echoed in an error message: at most `limit` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _closing(response: Response) -> Response:
    """`response`, closing the connection after it: the rest of a late body could still
    arrive, and must not be read as the next request."""
    response.headers["connection"] = "close"
    return response


def _body_timeout_message(settings: MockSettings) -> str:
    return f"The request body did not arrive within {settings.body_timeout_s:g} s."


def _limit_error(status: int, message: str) -> bytes:
    """A refusal of `RequestLimits` (headers too large) in the OpenAI error shape."""
    del status  # the status line says it; the body is the OpenAI error shape
    return dumps(openai_error_body(message, "invalid_request_error"))


def _preview(raw: bytes, limit: int = 2000) -> str:
    return raw[:limit].decode("utf-8", errors="replace")


async def _read_bounded(
    request: Request, limit: int, what: str, code: str, settings: MockSettings
) -> bytes | Response:
    """The body of a `POST /_mock/...` request, or the answer refusing it: 413 (`code`)
    past `limit` bytes, 408 when it does not arrive in time, a bare 400 for a client gone
    before its body was read."""
    try:
        return await _read_body(request, limit, settings.body_timeout_s)
    except _BodyTooLarge:
        return error_response(413, f"The {what} body is larger than {limit} bytes.", code=code)
    except _BodyTimeout:
        return _closing(error_response(408, _body_timeout_message(settings)))
    except ClientDisconnect:
        return Response(status_code=400)


async def _read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The body, at most `limit` bytes, whole within `timeout_s` (else _BodyTimeout)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for part in request.stream():
                size += len(part)
                if size > limit:
                    raise _BodyTooLarge
                parts.append(part)
    except TimeoutError:
        raise _BodyTimeout from None
    return b"".join(parts)


class _QuietAbortFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != ABORT_LOG_LINE


def quiet_abort_logs() -> None:
    """Drop uvicorn's error line for a deliberately aborted response (see module docstring)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietAbortFilter) for f in logger.filters):
        logger.addFilter(_QuietAbortFilter())
