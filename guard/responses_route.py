"""The guard proxy's route for the OpenAI Responses API (`POST /v1/responses`).

`responses_routes(settings, session)` are the routes `guard.server.create_app` serves
before its catch-all: `POST` to any path ending in `/responses` goes upstream with the
client's body and headers; a streamed answer (`"stream": true`) comes back through
`guard.responses_stream`, a whole one through `guard.responses_whole`; a reply that was
nothing but markup gets the one recovery request (`guard.responses_api.recovery_body`),
whose answer goes into the same response. Everything else under `/v1/responses/...`
(retrieving, cancelling, deleting a stored response) goes to the catch-all, passed on as
it is.

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
  is not a failure: the answer is whole.
- What the events of one upstream read become goes to the client as one write (a stream
  reaches the client read for read, and the events a hold let go travel with the text that
  ended it, not as a burst of small sends).
- Keep-alive comments during upstream silences, and a client that leaves closes the
  upstream response, as on the chat route.
- One log line per request, `guard: responses status=...`, and the strip warning, as on the
  chat route.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import aiohttp
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from guard.openai_http import (
    KEEPALIVE,
    OpenAICall,
    error_message,
    next_piece,
    openai_pass_on,
)
from guard.reply import WholeReply, json_object
from guard.responses_api import recovery_body
from guard.responses_stream import ResponsesStreamGuard
from guard.responses_whole import ResponseGuard
from guard.upstream import (
    CUT_OFF,
    UPSTREAM_ERRORS,
    GuardSettings,
    UpstreamSession,
    json_response,
    raw_response,
    upstream_headers,
)
from guardrail.sse_events import LineTooLong, SseDecoder

__all__ = ["responses_routes"]


def responses_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    upstream = settings.upstream.rstrip("/")

    async def responses(request: Request) -> Response:
        raw = await request.body()
        body = json_object(raw)
        if body is None:  # not ours to judge: the upstream answers it
            return await openai_pass_on(session(), upstream, request, raw)
        headers = upstream_headers(request, accept_encoding="identity")
        url = f"{upstream}{request.url.path}"
        return await _ResponsesCall(session(), url, headers, settings).answer(body)

    return [Route("/{prefix:path}responses", responses, methods=["POST"])]


class _ResponsesCall(OpenAICall):
    """One Responses API request through the guardrail: its upstream requests and log."""

    route = "responses"  # the log line's name for this route

    # --- streamed ---------------------------------------------------------------------------

    async def stream(
        self, body: dict[str, Any], response: aiohttp.ClientResponse
    ) -> AsyncGenerator[bytes]:
        try:
            first = ResponsesStreamGuard(self.settings.registry_for(body))
            async for piece in self._relayed(response, first, 1):
                yield piece
            if not first.recovering:
                return
            self.recoveries += 1
            try:
                recovery = await self.post(recovery_body(body))
            except UPSTREAM_ERRORS:
                yield b"".join(first.fail(CUT_OFF, "upstream_502"))
                return
            if recovery.status >= 300:
                message = await error_message(recovery)
                failed_code = "rate_limit_exceeded" if recovery.status == 429 else "server_error"
                yield b"".join(first.fail(message, f"upstream_{recovery.status}", failed_code))
                return
            second = ResponsesStreamGuard(self.settings.registry_for(body), follows=first)
            async for piece in self._relayed(recovery, second, 2):
                yield piece
        finally:
            self.log(self.route, stream=True)

    async def _relayed(
        self, response: aiohttp.ClientResponse, guard: ResponsesStreamGuard, round_number: int
    ) -> AsyncGenerator[bytes]:
        """One upstream stream through `guard`, as it comes, to the end of its body; ends
        early, with the in-band error, when the upstream cuts it."""
        decoder, ended = SseDecoder(), False
        try:
            while not ended:
                try:
                    piece = await next_piece(response, self.settings.keepalive_s)
                    if piece is None:
                        yield KEEPALIVE  # the upstream is silent (a model thinking)
                        continue
                    events = decoder.feed(piece) if piece else decoder.finish()
                except (*UPSTREAM_ERRORS, LineTooLong):
                    if guard.ended or guard.recovering:
                        break  # the stream had said everything: the answer is whole
                    self.failed = True
                    yield b"".join(guard.fail(CUT_OFF, "upstream_502"))  # not ended: says so
                    return
                ended = not piece
                out = [data for event in events for data in guard.event(event)]
                if out:  # one write for what one read brought
                    yield b"".join(out)
            rest = guard.end()
            if rest:
                yield b"".join(rest)
        finally:
            if ended:
                response.release()
            else:
                response.close()  # the client left, or the stream broke: the upstream learns
            self.count(guard.stripped_chars, guard.first_span, round_number)

    # --- whole ------------------------------------------------------------------------------

    def whole_guard(self, body: dict[str, Any], follows: WholeReply | None) -> WholeReply:
        return ResponseGuard(self.settings.registry_for(body), follows=follows)

    def recovery_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return recovery_body(body)

    def recovered(
        self, response: aiohttp.ClientResponse, raw: bytes, answer: dict[str, Any], changed: bool
    ) -> Response:
        return json_response(response, answer) if changed else raw_response(response, raw)
