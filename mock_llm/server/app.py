"""The mock as an ASGI app: its routes, each a module-level function, and the middleware
every response goes through.

Everything decided about a response (which flow, which step, which bytes, which fault)
happens in the pure modules; the routes only read requests, consult them, and play the
resulting `ResponsePlan` (`mock_llm.server.played`). The routes find the server's state
(`MockState`: the catalog, the side-call rules, the journal, the turns) on `app.state.mock`.

- The model APIs' routes are in `mock_llm.server.chat_routes`, the mock's own
  (`/_mock/...`, `/healthz`) in `mock_llm.server.mock_routes`.
- Every response carries the security headers of a data-only server (`API_POLICY`,
  nosniff, no referrer, no framing).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mock_llm.server.answers import cut, error_response, limit_error
from mock_llm.server.chat_routes import (
    anthropic_messages,
    chat_completions,
    gemini,
    models,
    ollama_chat,
    ollama_tags,
    ollama_version,
    responses,
)
from mock_llm.server.mock_routes import (
    add_flows,
    add_side_calls,
    clear_requests,
    healthz,
    list_flows,
    list_requests,
    list_side_calls,
)
from mock_llm.server.state import MockSettings, MockState
from servekit.limits import RequestLimits
from servekit.security_headers import SecurityHeaders, security_headers

API_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
"""The mock's Content-Security-Policy: it serves data (JSON, event streams), never a page, so
nothing may load at all and nothing may frame it."""

ROUTES = [
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


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error_response(
        exc.status_code, f"{exc.detail}: {request.method} {cut(request.url.path)}"
    )


def create_app(settings: MockSettings) -> Starlette:
    """The mock as an ASGI app (serve it with uvicorn, or call it through an ASGI transport)."""
    headers = Middleware(SecurityHeaders, headers=security_headers(API_POLICY))
    limits = Middleware(
        RequestLimits, error_body=limit_error, body_timeout_s=None, hosts=settings.hosts
    )
    app = Starlette(
        routes=ROUTES,
        exception_handlers={HTTPException: http_error},
        middleware=[headers, limits],
    )
    app.state.mock = MockState(settings)
    return app
