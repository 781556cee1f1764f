"""The mock's own routes (`/_mock/...` and `/healthz`): the journal, the flow catalog and
the side-call rules, read and added to at run time.

Flows added at run time (`POST /_mock/flows`) join the catalog. Their text is parsed in a
worker thread (a large body must not stall the streams in flight), then checked and added
in one step on the event loop, so two requests adding flows never interleave. A journal read
with `settle_ms` waits on the journal's change signal (`mock_llm.journal.settle`), never by
polling, and for no longer than its `timeout_ms`.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from mock_llm.flows.catalog import (
    RUNTIME_SOURCE,
    RuntimeFlowsRefused,
    add_runtime_flows,
    catalog_to_json,
    runtime_count,
)
from mock_llm.flows.flow_file import FlowFileError, parse_flows
from mock_llm.journal.query import QueryError, parse_journal_query
from mock_llm.journal.settle import wait_settled
from mock_llm.play.side_calls import MAX_BODY_BYTES as MAX_SIDE_CALLS_BODY_BYTES
from mock_llm.play.side_calls import (
    MAX_PATTERNS,
    SideCallRules,
    SideCallsRefused,
    compile_rules,
    parse_patterns_body,
)
from mock_llm.server.answers import JSONResponse, error_response, read_bounded
from mock_llm.server.state import mock_state


async def list_requests(request: Request) -> Response:
    state = mock_state(request)
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
    state = mock_state(request)
    state.journal.clear()
    return Response(status_code=204)


async def list_flows(request: Request) -> Response:
    state = mock_state(request)
    return JSONResponse(catalog_to_json(state.flows))


async def add_flows(request: Request) -> Response:
    state = mock_state(request)
    settings = state.settings
    limit = settings.max_flows_body_bytes
    raw = await read_bounded(request, limit, "flows", "flows_too_large")
    if isinstance(raw, Response):
        return raw
    try:
        text = raw.decode("utf-8")
        new = await anyio.to_thread.run_sync(parse_flows, text, RUNTIME_SOURCE)
    except UnicodeDecodeError:
        return error_response(400, "Bad flows: the body is not UTF-8 text.", code="invalid_flows")
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
    state = mock_state(request)
    return JSONResponse(_side_calls_json(state.side_calls))


async def add_side_calls(request: Request) -> Response:
    limit, code = MAX_SIDE_CALLS_BODY_BYTES, "side_calls_too_large"
    raw = await read_bounded(request, limit, "side-call rules", code)
    if isinstance(raw, Response):
        return raw
    state = mock_state(request)
    try:
        patterns = parse_patterns_body(raw)
        new = await anyio.to_thread.run_sync(compile_rules, patterns)
        addition = state.side_calls.add(new)
    except SideCallsRefused as exc:
        return error_response(exc.status, exc.message, param=exc.param, code=exc.code)
    state.side_calls = addition.rules
    answer = {"added": list(addition.added), "unchanged": list(addition.unchanged)}
    return JSONResponse({**answer, **_side_calls_json(state.side_calls)})


async def healthz(request: Request) -> Response:
    state = mock_state(request)
    return JSONResponse({"status": "ok", "flows": len(state.flows)})


def _side_calls_json(rules: SideCallRules) -> dict[str, Any]:
    return {"patterns": list(rules.patterns), "max_patterns": MAX_PATTERNS}
