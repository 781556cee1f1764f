"""The guard proxy's route for the OpenAI Responses API (`POST /v1/responses`).

`responses_routes(settings, session)` are the routes `guard.server.create_app` serves
before its catch-all: `POST` to any path ending in `/responses` goes upstream with the
client's body and headers; a streamed answer (`"stream": true`) comes back through
`guard.responses_stream`, a whole one through `guard.responses_whole`; a reply that was
nothing but markup gets the one recovery request (`guard.responses_api.recovery_body`),
whose answer goes into the same response. Everything else under `/v1/responses/...`
(retrieving, cancelling, deleting a stored response) goes to the catch-all, passed on as
it is. The streamed flow (the reads through the guard, the recovery, the failures) is
`guard.event_stream`'s, shared with Anthropic's Messages API route.

Deliberate choices, the chat route's (guard.server) in the Responses API's shapes:
- An upstream error status (429 with Retry-After, 503, a 400) is passed on as it is; an
  upstream that cannot be reached is a 502 with the OpenAI error body; a body that is not a
  JSON object is the upstream's to answer.
- A stream that breaks after it began ends with the Responses API's in-band error (an
  `error` event, then `response.failed`): "The model's reply was cut off." for a stream the
  upstream cuts or a recovery it cannot be reached for, the upstream's own message for a
  recovery it refuses, the malformed-reply copy for a recovery that stays empty (G3,
  `code` `malformed_reply`). A whole answer: a 502 with the OpenAI error body, or the
  refusal passed on.
- A read that fails once the upstream's stream has said all it had to (its completion came)
  is not a failure: the answer is whole; what one upstream read brings goes to the client
  as one write (`guard.event_stream`).
- Keep-alive comments during upstream silences, and a client that leaves closes the
  upstream response, as on the chat route.
- One log line per request, `guard: responses status=...`, and the strip warning, as on the
  chat route.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from guard.event_stream import EventStreamCall
from guard.openai_http import OpenAICall, openai_unreachable
from guard.reply import WholeReply
from guard.responses_api import recovery_body
from guard.responses_stream import ResponsesStreamGuard
from guard.responses_whole import ResponseGuard
from guard.upstream import (
    GuardSettings,
    UpstreamSession,
    guarded,
)

__all__ = ["responses_routes"]


def responses_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    async def responses(request: Request) -> Response:
        return await guarded(request, settings, session, _ResponsesCall, openai_unreachable)

    return [Route("/{prefix:path}responses", responses, methods=["POST"])]


class _ResponsesCall(EventStreamCall[ResponsesStreamGuard], OpenAICall):
    """One Responses API request through the guardrail: its upstream requests and log."""

    route = "responses"  # the log line's name for this route

    def stream_guard(
        self, body: dict[str, Any], follows: ResponsesStreamGuard | None
    ) -> ResponsesStreamGuard:
        return ResponsesStreamGuard(self.settings.registry_for(body), follows=follows)

    def failure(self, guard: ResponsesStreamGuard, message: str, status: int) -> bytes:
        failed_code = "rate_limit_exceeded" if status == 429 else "server_error"
        return b"".join(guard.fail(message, f"upstream_{status}", failed_code))

    # --- whole ------------------------------------------------------------------------------

    def whole_guard(self, body: dict[str, Any], follows: WholeReply | None) -> WholeReply:
        return ResponseGuard(self.settings.registry_for(body), follows=follows)

    def recovery_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return recovery_body(body)
