"""The guard proxy's routes for Ollama's native API (Open WebUI's Ollama connection).

`ollama_routes(settings, session)` guard `POST /api/chat` and `POST /api/generate` through
`guard.ollama`, a markup-only reply getting the one recovery in the same response; every
other `/api/...` request is passed on as it is.

Deliberate choices:
- A streamed answer's head waits for its first line, so an answer whose first line would
  be an error is a 502 with `{"error": ...}` instead: clients handle an error status far
  better than an error line (Open WebUI 0.12 shows an empty answer). A clean stream's first
  line comes at once, so this delays nothing visible.
- Faults look as Ollama's own: a 502 with `{"error": ...}` when unreachable, an error
  status passed on, an error line ending a cut stream so the client raises.
- No keep-alive bytes: NDJSON has no comment line (the client fails on a blank one), and
  Ollama's clients already wait through silences while a model loads.
- A client that leaves closes the upstream response at once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from functools import partial
from typing import Any

import aiohttp
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from guard.ollama import (
    CHAT,
    GENERATE,
    NdjsonLines,
    OllamaApi,
    OllamaStreamGuard,
    OllamaWholeGuard,
    error_line,
    own_error_text,
    upstream_error_text,
)
from guard.reply import WholeReply
from guard.upstream import (
    CUT_OFF,
    METHODS,
    STREAM_FAULTS,
    UNREACHABLE,
    GuardedCall,
    GuardSettings,
    StreamRound,
    UpstreamSession,
    fault_message,
    guarded,
    pass_on,
    read_refusal,
    response_headers,
)
from servekit.pool import Pool
from servekit.streamed import StreamedResponse

__all__ = ["ollama_routes"]


def ollama_routes(settings: GuardSettings, session: UpstreamSession) -> list[Route]:
    upstream = settings.upstream.rstrip("/")

    async def answer(request: Request, api: OllamaApi) -> Response:
        return await guarded(
            request, settings, session, partial(_OllamaCall, api=api), _unreachable
        )

    async def chat(request: Request) -> Response:
        return await answer(request, CHAT)

    async def generate(request: Request) -> Response:
        return await answer(request, GENERATE)

    async def other(request: Request) -> Response:
        return await pass_on(session(), upstream, request, await request.body(), _unreachable)

    return [
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/generate", generate, methods=["POST"]),
        Route("/api/{path:path}", other, methods=METHODS),
    ]


class _OllamaCall(GuardedCall):
    """One /api/chat or /api/generate request through the guardrail."""

    def __init__(
        self,
        session: Pool,
        url: str,
        headers: dict[str, str],
        settings: GuardSettings,
        api: OllamaApi,
    ) -> None:
        super().__init__(session, url, headers, settings)
        self.api = api
        self.route = f"ollama-{api.name}"
        self.logged = False

    # --- what this route says ------------------------------------------------------------

    def streams(self, body: dict[str, Any]) -> bool:
        return body.get("stream") is not False  # Ollama streams unless told not to

    def error(self, status: int, message: str, code: str | None = None) -> Response:
        del code  # Ollama's error body has no code
        return _error(status, message)

    async def streamed(self, body: dict[str, Any], response: aiohttp.ClientResponse) -> Response:
        return await _streamed(
            self._stream(body, response), response.status, response_headers(response.headers)
        )

    def whole_guard(self, body: dict[str, Any], follows: WholeReply | None) -> WholeReply:
        return OllamaWholeGuard(self.settings.registry_for(body), api=self.api, follows=follows)

    def recovery_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.api.recovery_body(body)

    # --- streamed ---------------------------------------------------------------------------

    async def _stream(
        self, body: dict[str, Any], response: aiohttp.ClientResponse
    ) -> AsyncGenerator[bytes]:
        try:
            async for out in self.recovered_stream(
                body, response, partial(self._stream_guard, body), self._relayed, self._refused
            ):
                yield out
        finally:
            self._logged_stream()

    def _stream_guard(
        self, body: dict[str, Any], follows: OllamaStreamGuard | None
    ) -> OllamaStreamGuard:
        return OllamaStreamGuard(self.settings.registry_for(body), api=self.api, follows=follows)

    def recovers(self, first: StreamRound) -> bool:
        """Ollama's stream is read to the end of its body after the done line, so a read
        that fails after a done line that asked for the recovery still goes on to it."""
        return first.recovering

    async def _refused(
        self, first: OllamaStreamGuard, recovery: aiohttp.ClientResponse | str
    ) -> bytes:
        """The error line that ends the stream, logged before it goes out (a client that
        stops at an error line has the log written by then)."""
        del first  # the error line is the same whichever reply it ends
        if isinstance(recovery, str):
            self._logged_stream()
            return error_line(recovery)
        refusal = await read_refusal(recovery)
        self._logged_stream()
        return error_line(upstream_error_text(refusal, recovery.status))

    async def _relayed(
        self, response: aiohttp.ClientResponse, guard: OllamaStreamGuard, round_number: int
    ) -> AsyncGenerator[bytes]:
        """One upstream stream through `guard`, as it comes; ends with an error line when
        the upstream cuts it or goes past a bound (`fault_message`). The body is read to
        its end (the guard sends nothing after a done or error line), so the connection
        goes back to the pool. The round is counted, and a request it ends is logged, before
        its last line goes out: a client that stops at an error line has the log written
        by then."""
        lines, counted = NdjsonLines(self.settings.max_line_bytes), False
        complete, cut = False, CUT_OFF

        def settle() -> None:
            nonlocal counted
            if not counted:
                counted = True
                self.count(guard.stripped_chars, guard.first_span, round_number)
            if not guard.recovering:
                self._logged_stream()

        try:
            while True:
                try:
                    piece = await response.content.readany()
                    got = lines.feed(piece) if piece else lines.finish()
                    outs = [out for line in got for out in guard.line(line)]
                except STREAM_FAULTS as exc:
                    self.failed, cut = True, fault_message(exc)
                    break
                if guard.finished:
                    settle()
                for out in outs:
                    yield out
                if not piece:
                    break
            complete = not self.failed
            outs = guard.end(cut)
            settle()
            for out in outs:
                yield out
        finally:
            if complete:
                response.release()
            else:
                response.close()  # the client left, or the stream broke: the upstream learns
            settle()

    def _logged_stream(self) -> None:
        """The streamed request's log line, written once."""
        if not self.logged:
            self.logged = True
            self.log(self.route, stream=True)


async def _streamed(lines: AsyncGenerator[bytes], status: int, headers: dict[str, str]) -> Response:
    """The client's answer to a guarded stream, its head held until the first line: a
    stream whose first line would be an error (the malformed reply, a cut before any line,
    a refused recovery) is that error as a status, 502 `{"error": ...}`, instead."""
    try:
        first = await anext(lines)
    except StopAsyncIteration:
        first = b""
    message = own_error_text(first)
    if message is not None:
        await lines.aclose()
        return _error(502, message)

    async def rest() -> AsyncGenerator[bytes]:
        try:
            if first:
                yield first
            async for line in lines:
                yield line
        finally:
            await lines.aclose()

    return StreamedResponse(rest(), status_code=status, headers=headers)


def _error(status: int, message: str) -> JSONResponse:
    """Ollama's error body, `{"error": message}`."""
    return JSONResponse({"error": message}, status_code=status)


def _unreachable() -> Response:
    return _error(502, UNREACHABLE)
