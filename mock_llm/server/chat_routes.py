"""The model APIs' routes: a chat request in any API's shape is read, routed to its flow
and step, and answered by playing that step; plus each API's model listing.

Side calls (`mock_llm.play.side_calls`) are told apart before a trigger is read
(`mock_llm.play.routing`): they never advance a turn and play the first step of the
`side-call` flow. While there are side-call rules, a request is classified in a worker
thread: a rule's matches are bounded in time, but they must not hold up the streams in
flight meanwhile.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from mock_llm.flows.model import describe_fault
from mock_llm.flows.trigger import TriggerError
from mock_llm.journal.store import JournalEntry
from mock_llm.play.response_plan import Api, RequestShape
from mock_llm.play.routing import Destination, route_request
from mock_llm.play.side_calls import SideCallRules
from mock_llm.play.stream_template import plan_stream_response
from mock_llm.server.answers import (
    MAX_ERROR_MESSAGE_CHARS,
    JSONResponse,
    closing,
    cut,
    error_response,
    read_body,
)
from mock_llm.server.played import PlayedResponse
from mock_llm.server.state import MockState, mock_state
from mock_llm.wire import gemini as gemini_wire
from mock_llm.wire import ollama as ollama_wire
from mock_llm.wire import openai as openai_wire
from mock_llm.wire.anthropic_request import parse_anthropic_request
from mock_llm.wire.chat_request import ChatRequest, RequestError, offered_tools, parse_chat_request
from mock_llm.wire.gemini_request import parse_gemini_request
from mock_llm.wire.responses_request import parse_responses_request
from servekit.error_bodies import anthropic_error_body
from servekit.request_body import BodyTimeout, BodyTooLarge

MODEL_ID = "mock-llm"


async def chat_completions(request: Request) -> Response | PlayedResponse:
    return await _chat(request, "openai")


async def ollama_chat(request: Request) -> Response | PlayedResponse:
    return await _chat(request, "ollama")


async def responses(request: Request) -> Response | PlayedResponse:
    return await _chat(request, "responses")


async def anthropic_messages(request: Request) -> Response | PlayedResponse:
    return await _chat(request, "anthropic")


async def gemini(request: Request) -> Response | PlayedResponse:
    return await _chat(request, "gemini")


async def _chat(request: Request, api: Api) -> Response | PlayedResponse:
    state = mock_state(request)
    entry = state.journal.open(request.url.path, api, request.headers.get("x-request-id"))
    try:
        return await _answer_chat(request, entry, api, state)
    except Exception as exc:  # a bug: the entry must still end, or settle reads would hang
        if entry.outcome == "in_progress":
            entry.finish("rejected", f"The mock failed on this request ({type(exc).__name__}).")
        raise


async def _answer_chat(
    request: Request, entry: JournalEntry, api: Api, state: MockState
) -> Response | PlayedResponse:
    settings = state.settings
    try:
        raw = await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
    except BodyTooLarge as refused:
        return _reject(entry, 413, refused.message, api=api)
    except BodyTimeout as refused:
        return closing(_reject(entry, 408, refused.message, api=api))
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
        message = f"Unknown mock flow {cut(route.flow)!r}. Known flows: {known}."
        param = _messages_param(api)
        return _reject(entry, 400, message, param, code="unknown_flow", api=api)
    step_index = 0  # a side call belongs to no turn: it plays the first step
    if not route.side_call:
        position = state.turns.advance(flow.name, len(flow.steps), route.key, route.turn_text)
        step_index = position.step_index
        entry.request_in_turn = position.request_number
    step = flow.steps[step_index]
    if step.dialect is None and settings.dialect != "openai":
        step = replace(step, dialect=settings.dialect)
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


async def models(request: Request) -> Response:
    model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "mock_llm"}
    return JSONResponse({"object": "list", "data": [model]})


async def ollama_tags(request: Request) -> Response:
    return JSONResponse(ollama_wire.tags(MODEL_ID, 0))


async def ollama_version(request: Request) -> Response:
    return JSONResponse({"version": ollama_wire.VERSION})


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
        return JSONResponse(ollama_wire.error_body(cut(message, MAX_ERROR_MESSAGE_CHARS)), status)
    if api == "anthropic":
        body = anthropic_error_body(status, cut(message, MAX_ERROR_MESSAGE_CHARS))
        return JSONResponse(body, status)
    if api == "gemini":
        field = None if param is None else cut(param)
        body = gemini_wire.error_body(status, cut(message, MAX_ERROR_MESSAGE_CHARS), field=field)
        return JSONResponse(body, status)
    return error_response(status, message, param=param, code=code)


def _preview(raw: bytes, limit: int = 2000) -> str:
    return raw[:limit].decode("utf-8", errors="replace")
