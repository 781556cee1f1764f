"""The guard proxy's route for the OpenAI Responses API (`POST /v1/responses`).

`responses_routes(settings, session)` guard `POST` to any path ending in `/responses`: a
stream through `guard.responses_stream` (the flow is `guard.event_stream`'s), a whole
answer through `guard.responses_whole`, a markup-only reply getting the one recovery. The
rest of `/v1/responses/...` (retrieve, cancel, delete) goes to the catch-all.

Deliberate choices (the chat route's, in this API's shapes):
- An upstream error status is passed on as it is; an unreachable upstream is a 502 with
  the OpenAI error body.
- A stream that breaks after it began ends with an `error` event then `response.failed`,
  the malformed-reply copy (`code` `malformed_reply`) for an empty recovery (G3).
- A read that fails after the completion came is not a failure: the answer is whole.
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
