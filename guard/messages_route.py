"""The guard proxy's route for Anthropic's Messages API (`POST /v1/messages`).

`messages_routes(settings, session)` are the routes `guard.server.create_app` serves before
its catch-all: `POST /v1/messages`, and `POST` to any path ending in `/messages` (a client
whose base URL has another prefix, or none), goes upstream with the client's body and
headers (its `x-api-key` and `anthropic-version` included); a streamed answer (`"stream":
true`) comes back through `guard.messages_stream`, a whole one through
`guard.messages_api.MessageGuard`; a reply that was nothing but markup gets the one recovery
request (`guard.messages_api.recovery_body`), whose answer goes into the same response. The
streamed flow is `guard.event_stream`'s, shared with the Responses route. Everything else
under `/v1/messages/...` (`count_tokens`, the batches API) goes to the catch-all, passed on
as it is.

Deliberate choices, the other routes' in the Messages API's shapes:
- An upstream error status (429 with Retry-After, 529, a 400) is passed on as it is; an
  upstream that cannot be reached is a 502 with Anthropic's error body (`{"type": "error",
  "error": {"type": "api_error", "message": ...}}`), on every path this route takes; a body
  that is not a JSON object is the upstream's to answer.
- A stream that breaks after it began ends with Anthropic's in-band `error` event, which the
  anthropic SDK raises as `APIStatusError`: "The model's reply was cut off." for a stream the
  upstream cuts or a recovery it cannot be reached for, the upstream's own message for a
  recovery it refuses (the error type its status has), the malformed-reply copy for a
  recovery that stays empty (G3). A whole answer: a 502 with Anthropic's error body, or the
  refusal passed on.
- A whole recovered answer is the recovery's message as it came (filtered), its own id
  included: the client has seen no other. A stream keeps the first message's id (its
  `message_start` went out first).
- During upstream silences mid-stream the client gets a `ping` event, as Anthropic's API
  sends it (the SDK skips it; an SSE comment would do for the SDK too, but a ping is what
  every Anthropic client already reads). A client that leaves closes the upstream
  response.
- One log line per request, `guard: messages status=...`, and the strip warning, as on the
  other routes.
- Another API's `/messages` (the OpenAI Assistants API's `POST /v1/threads/{id}/messages`)
  goes through this route too and comes back as it came: its content blocks are not the
  Messages API's text blocks, so nothing in it is filtered, and it never streams.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from guard.event_stream import EventStreamCall
from guard.messages_api import MessageGuard, recovery_body
from guard.messages_stream import MessagesStreamGuard
from guard.reply import WholeReply
from guard.responses_api import event_bytes
from guard.upstream import (
    UNREACHABLE,
    GuardSettings,
    UpstreamSession,
    guarded,
)
from servekit.error_bodies import anthropic_error_body

__all__ = ["messages_routes"]

PING = event_bytes({"type": "ping"})
"""What the client gets during an upstream silence: the API's own keep-alive event."""


def messages_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    async def messages(request: Request) -> Response:
        return await guarded(request, settings, session, _MessagesCall, _unreachable)

    return [
        Route("/messages", messages, methods=["POST"]),
        Route("/{prefix:path}/messages", messages, methods=["POST"]),
    ]


class _MessagesCall(EventStreamCall[MessagesStreamGuard]):
    """One Messages API request through the guardrail: its upstream requests and log."""

    route = "messages"  # the log line's name for this route
    keepalive = PING

    def error(self, status: int, message: str, code: str | None = None) -> Response:
        del code  # Anthropic's error body has its type, which the status gives
        return _error(status, message)

    def stream_guard(
        self, body: dict[str, Any], follows: MessagesStreamGuard | None
    ) -> MessagesStreamGuard:
        return MessagesStreamGuard(self.settings.registry_for(body), follows=follows)

    def failure(self, guard: MessagesStreamGuard, message: str, status: int) -> bytes:
        return b"".join(guard.fail(message, status))

    def whole_guard(self, body: dict[str, Any], follows: WholeReply | None) -> WholeReply:
        return MessageGuard(self.settings.registry_for(body), follows=follows)

    def recovery_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return recovery_body(body)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(anthropic_error_body(status, message), status_code=status)


def _unreachable() -> Response:
    return _error(502, UNREACHABLE)
