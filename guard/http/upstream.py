"""The guard proxy's upstream side, shared by every route it guards or passes on.

The proxy's settings, the one upstream session, which headers go each way, reading a whole
answer that may be cut, passing a request on as it is, and `GuardedCall`: one guarded
request's upstream requests, log line, and the I/O of the flow every API follows
(`guard.relay`: an error status passed on, a whole answer or streamed rounds with the one
recovery). A route supplies what is its own: its API (`guard.wire.apis`), its error shape
and its keep-alive.

Deliberate choices:
- Client headers go upstream, Authorization included (hop-by-hop and Host aside); no
  header is ever logged but the request id. A guarded answer is asked for uncompressed; a
  passed-on request keeps the client's Accept-Encoding (its bytes are relayed, the client
  decompresses).
- A guarded answer that comes compressed all the same (`Content-Encoding` other than
  identity) is refused with the route's 502, read no further: the proxy never inflates
  an upstream body, so a gzip bomb costs it nothing (`Unguardable`).
- What a hostile upstream can make the proxy hold is bounded (docs/reliability.md): a
  whole answer by `max_answer_bytes`, a stream's line or event by `max_line_bytes`, a
  reply's texts by `guard.wire.reply.MAX_TEXTS`; past a bound a stream ends with the route's
  in-band error (`fault_message`). Invalid UTF-8 is read as U+FFFD on every route.
- A guarded request goes upstream with an `X-Request-Id` (the client's when it is a plain
  token, else the proxy's own), its recovery with the same one, and its log line ends
  `request_id=...`: what ties the line to the model server's own records (the mock's journal
  keeps it per entry, so the conformance kit can judge G10 for any app behind the proxy).
  Anything else in the client's header is replaced, never logged: the log stays one line.
- The helpers here never write an error body: what a fault looks like is each route's own.
- Every request goes through `servekit.pool.Pool` (short idle time, one retry on a fresh
  connection for a stale one); any other failure is the route's 502, its log line naming
  the cause (`error=ClientConnectorError reused=false`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from functools import partial
from typing import Any

import aiohttp
from starlette.requests import Request
from starlette.responses import Response

from guard import relay
from guard.call_log import REQUEST_ID, log_once, request_id
from guard.relay import (
    Emit,
    Fault,
    Limits,
    Opened,
    Post,
    Read,
    Refused,
    Reply,
    Settle,
    Tally,
    Whole,
    step,
)
from guard.settings import GuardSettings
from guard.wire.api import Api
from guard.wire.faults import BOUNDS_BROKEN, CUT_OFF, UNREACHABLE
from servekit.hop_by_hop import end_to_end
from servekit.json_codec import parse_object
from servekit.pool import Pool, RequestFailed
from servekit.streamed import StreamedResponse

log = logging.getLogger("guard")

UPSTREAM_ERRORS = (RequestFailed, aiohttp.ClientError, OSError, TimeoutError)
STREAM_FAULTS = (*UPSTREAM_ERRORS, *BOUNDS_BROKEN)
"""What ends a stream early: a cut, or a bound broken (`fault_message` says which)."""
IDENTITY_CODINGS = ("", "identity")
MAX_ERROR_BODY_BYTES = 64 * 1024
"""The most of an upstream refusal read for its message."""
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
OWN_HEADERS = ("host", "content-length", "accept-encoding", "date", "server")
"""Headers the proxy drops besides the hop-by-hop ones (servekit.hop_by_hop): its HTTP client
and its server write their own, and Accept-Encoding is set per request (`upstream_headers`)."""


class UpstreamSession:
    """The one upstream pool of an app (its aiohttp sessions are made on first use, inside
    the server's loop)."""

    def __init__(self, settings: GuardSettings) -> None:
        self._pool = Pool(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=settings.connect_timeout_s),
            idle_s=settings.pool_idle_s,
            auto_decompress=False,
        )

    def __call__(self) -> Pool:
        return self._pool

    async def close(self) -> None:
        await self._pool.close()


class GuardedCall:
    """One guarded request: its upstream requests, the log line, and the I/O of the flow
    every API follows (`guard.relay`), for the API `api` (guard.wire.apis: its guards, its
    recovery, its error shape); `keepalive` is what the client gets during an upstream
    silence (None: the silence is waited through without a word)."""

    def __init__(
        self,
        session: Pool,
        url: str,
        headers: dict[str, str],
        settings: GuardSettings,
        *,
        api: Api,
        keepalive: bytes | None = None,
    ) -> None:
        self.session, self.url, self.headers, self.settings = session, url, headers, settings
        self.api, self.keepalive = api, keepalive
        self.request_id = headers.get(REQUEST_ID, "-")  # for the log line
        self.started = time.perf_counter()
        self.tally = Tally()
        self.status = 0
        self.cause = ""  # the log fields of an upstream request that failed, if one did
        self.model: object = None  # the request's `model`, for the log's profiles= under auto
        self.logged = False

    async def post(self, body: dict[str, Any]) -> aiohttp.ClientResponse:
        """The upstream's response to `body`; RequestFailed (its cause noted for the log)
        when there is none, Unguardable for an answer compressed though the proxy asked
        for it uncompressed (closed unread)."""
        data = json.dumps(body).encode()
        try:
            response = await self.session.request("POST", self.url, data=data, headers=self.headers)
        except RequestFailed as failed:
            self.cause = failed.cause
            raise
        coding = response.headers.get("Content-Encoding", "").strip().lower()
        if response.status < 300 and coding not in IDENTITY_CODINGS:
            response.close()
            self.status, self.cause = response.status, "error=Unguardable"
            raise Unguardable(coding)
        return response

    def log(self, *, stream: bool) -> None:
        """`guard: ROUTE status=N stream=B retries=N total_ms=N scaffold_stripped=N
        profiles=X request_id=ID` (guard/call_log.py), once, after a warning for each reply
        that had markup: the cause after the status when an upstream request failed
        (`status=0 error=... reused=...` when the first did); X is the setting, or under
        auto the families the request's model matched (ProfileChoice.describe); ID the
        `X-Request-Id` its upstream requests carried."""
        log_once(self, log, stream=stream)

    def profiles_said(self) -> str:
        return self.settings.profiles.describe(self.model)

    # --- the flow every route follows -------------------------------------------------------

    async def answer(self, body: dict[str, Any]) -> Response:
        """The client's answer to `body`: an unreachable upstream is a 502, an upstream error
        status is passed on as it is, and a stream or a whole answer goes through the
        guardrail."""
        self.model = body.get("model")
        stream = self.api.streams(body)
        try:
            response = await self.post(body)
        except UPSTREAM_ERRORS:
            self.log(stream=stream)
            return self.error(502, UNREACHABLE)
        except Unguardable as exc:
            self.log(stream=stream)
            return self.error(502, str(exc))
        self.status = response.status
        if response.status >= 300:
            self.log(stream=stream)
            return await self.relayed(response)
        if stream:
            return await self.streamed(body, response)
        try:
            return await self.whole(body, response)
        finally:
            self.log(stream=False)

    async def whole(self, body: dict[str, Any], response: aiohttp.ClientResponse) -> Response:
        """A whole answer through the flow (`guard.relay.whole`): a reply that was nothing
        but markup gets the one recovery, whose answer is the client's (a 502 when it stayed
        empty, G3; the upstream's own when it refused)."""
        first = await self._whole_reply(response)
        if not isinstance(first, Whole):
            return self.error(first.status, first.message)
        registry = self.settings.registry_for(body)
        flow = relay.whole(self.api, registry, body, first, self.tally)
        effect, answer = step(flow, None)
        last = response
        while answer is None:
            assert isinstance(effect, Post)
            try:
                recovery = await self.post(effect.body)
            except UPSTREAM_ERRORS:
                reply: Reply = Refused(502, UNREACHABLE)
            except Unguardable as exc:
                reply = Refused(502, str(exc))
            else:
                last, reply = recovery, await self._whole_reply(recovery)
            effect, answer = step(flow, reply)
        if answer.own:
            return Response(answer.body, status_code=answer.status, media_type="application/json")
        return Response(
            answer.body, status_code=answer.status, headers=response_headers(last.headers)
        )

    async def _whole_reply(self, response: aiohttp.ClientResponse) -> Whole | Refused:
        """What the flow is told of a whole upstream answer: its body, its refusal (a status
        of 300 or more: its body, passed on as it came), or that there is none to read."""
        try:
            raw = await read_whole(response, self.settings.max_answer_bytes)
        except AnswerTooLarge as exc:
            return Refused(502, str(exc))
        if raw is None:
            return Refused(502, CUT_OFF)
        if response.status >= 300:
            return Refused(response.status, self.api.refusal_message(raw, response.status), raw)
        return Whole(response.status, raw)

    async def streamed(self, body: dict[str, Any], response: aiohttp.ClientResponse) -> Response:
        """The client's answer to a streamed upstream answer (status below 300); for an API
        whose stream may open with one of the guard's own errors (`Api.first_error`), its
        head is held until the first bytes: such an error is a 502 instead."""
        out = self.stream(body, response)
        head = b""
        error = self.api.first_error
        if error is not None:
            head = await anext(out, b"")
            message = error(head)
            if message is not None:
                await out.aclose()
                return self.error(502, message)

        async def rest() -> AsyncGenerator[bytes]:
            try:
                if head:
                    yield head
                async for piece in out:
                    yield piece
            finally:
                await out.aclose()

        return StreamedResponse(
            rest() if error is not None else out,
            status_code=response.status,
            headers=response_headers(response.headers),
        )

    async def stream(
        self, body: dict[str, Any], response: aiohttp.ClientResponse
    ) -> AsyncGenerator[bytes]:
        """What the client's stream carries: the flow's (`guard.relay.streamed`), its upstream
        reads, its recovery request and its log line done here. A client that leaves, or a
        stream that breaks, closes the upstream response at once."""
        registry = self.settings.registry_for(body)
        limits = Limits(max_line_bytes=self.settings.max_line_bytes)
        flow = relay.streamed(self.api, registry, body, self.tally, limits)
        reply: Reply = None
        complete = False  # the flow ended (not the client): the connection can go back
        try:
            while True:
                effect, _ = step(flow, reply)
                if effect is None:
                    complete = not self.tally.failed
                    return
                reply = None
                if isinstance(effect, Emit):
                    yield effect.data
                elif isinstance(effect, Read):
                    try:
                        piece = await self._next_piece(response)
                        while piece is None:  # the upstream is silent (a model thinking)
                            yield self.keepalive or b""
                            piece = await self._next_piece(response)
                        reply = piece
                    except UPSTREAM_ERRORS:
                        reply = Fault(CUT_OFF)
                elif isinstance(effect, Settle):
                    self.log(stream=True)
                else:
                    assert isinstance(effect, Post)
                    response.release()
                    opened = await self._recovery_stream(effect.body)
                    if isinstance(opened, Refused):
                        reply = opened
                    else:
                        response, reply = opened, Opened()
        finally:
            flow.close()
            if complete:
                response.release()
            else:
                response.close()  # the client left, or the stream broke: the upstream learns
            self.log(stream=True)

    async def _next_piece(self, response: aiohttp.ClientResponse) -> bytes | None:
        """The next piece of the upstream body (b"" at its end), or None after a silence of
        `keepalive_s` where the route has a keep-alive to send."""
        if self.keepalive is None:
            return await response.content.readany()
        return await next_piece(response, self.settings.keepalive_s)

    async def _recovery_stream(self, body: dict[str, Any]) -> aiohttp.ClientResponse | Refused:
        """The recovery's upstream stream, open; or why there is none to read (a message of
        the proxy's own, a 502's, when the upstream could not be reached or answered
        compressed; the upstream's own message when it refused)."""
        try:
            recovery = await self.post(body)
        except UPSTREAM_ERRORS:
            return Refused(502, CUT_OFF)
        except Unguardable as exc:
            return Refused(502, str(exc))
        if recovery.status >= 300:
            raw = await read_refusal(recovery)
            return Refused(recovery.status, self.api.refusal_message(raw, recovery.status))
        return recovery

    async def relayed(self, response: aiohttp.ClientResponse) -> Response:
        """An upstream answer passed on whole: status, headers and body (a 502 when the
        upstream cut its body)."""
        try:
            return await relay_whole(response, self.settings.max_answer_bytes) or self.error(
                502, CUT_OFF
            )
        except AnswerTooLarge as exc:
            return self.error(502, str(exc))

    def error(self, status: int, message: str, code: str | None = None) -> Response:
        """The API's own error answer (`code`: a machine-readable code, where its shape has
        one)."""
        return api_error(self.api, status, message, code)


def api_error(api: Api, status: int, message: str, code: str | None = None) -> Response:
    """An error answer of the guard's own, in `api`'s shape."""
    return Response(
        api.error_body(status, message, code), status_code=status, media_type="application/json"
    )


async def next_piece(response: aiohttp.ClientResponse, silence_s: float) -> bytes | None:
    """The next piece of a streamed body (b"" at its end), or None after `silence_s`
    without one; a piece that comes later is still there for the next call."""
    scope = asyncio.timeout(silence_s)
    try:
        async with scope:
            return await response.content.readany()
    except TimeoutError:
        if scope.expired():
            return None
        raise  # a timeout of the connection's own


async def guarded(
    request: Request,
    settings: GuardSettings,
    session: UpstreamSession,
    api: Api,
    keepalive: bytes | None = None,
) -> Response:
    """A guarded route's answer to `request` in `api`: a `GuardedCall`'s, the upstream's
    answer asked for uncompressed. A body that is not a JSON object (not JSON, nested past
    the parser's limit, an array) is not ours to judge: it is passed on as it is."""
    upstream = settings.upstream.rstrip("/")
    raw = await request.body()
    body = parse_object(raw)
    if body is None:
        return await pass_on(session(), upstream, request, raw, unreachable(api))
    headers = upstream_headers(request, accept_encoding="identity")
    headers = {k: v for k, v in headers.items() if k.lower() != REQUEST_ID.lower()}
    headers[REQUEST_ID] = request_id(request.headers.get(REQUEST_ID))
    url = f"{upstream}{request.url.path}"
    call = GuardedCall(session(), url, headers, settings, api=api, keepalive=keepalive)
    return await call.answer(body)


def unreachable(api: Api) -> Callable[[], Response]:
    """The answer when the upstream cannot be reached, in `api`'s shape: a 502."""
    return partial(api_error, api, 502, UNREACHABLE)


def upstream_headers(request: Request, *, accept_encoding: str | None = None) -> dict[str, str]:
    """The client's headers for the upstream request (see the module docstring)."""
    headers = dict(end_to_end(request.headers.items(), also=OWN_HEADERS))
    headers["Accept-Encoding"] = (
        accept_encoding or request.headers.get("accept-encoding") or "identity"
    )
    return headers


def response_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return dict(end_to_end(headers.items(), also=OWN_HEADERS))


class AnswerTooLarge(Exception):
    """An upstream body over the proxy's bound: nothing of it is kept."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"The model server's answer is larger than {limit} bytes, more than the proxy reads."
        )


class Unguardable(Exception):
    """A guarded answer with a content coding the proxy did not ask for (it asks for
    identity): refused unread, as nothing can be filtered in it without inflating it."""

    def __init__(self, coding: str) -> None:
        super().__init__(
            f"The model server answered with Content-Encoding {coding}, though the proxy asked"
            " for identity; the proxy does not decompress answers."
        )


async def read_whole(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The whole body, or None when the upstream cut it; AnswerTooLarge past `limit` bytes
    (declared or grown). The connection is given back, or closed when not read to its end."""
    declared = response.content_length
    if declared is not None and declared > limit:
        response.close()
        raise AnswerTooLarge(limit)
    parts: list[bytes] = []
    size = 0
    try:
        while piece := await response.content.readany():
            size += len(piece)
            if size > limit:
                response.close()
                raise AnswerTooLarge(limit)
            parts.append(piece)
    except UPSTREAM_ERRORS:
        response.close()
        return None
    response.release()
    return b"".join(parts)


async def read_refusal(response: aiohttp.ClientResponse) -> bytes:
    """An upstream refusal's body, to read its message from: b"" when it was cut or is
    larger than MAX_ERROR_BODY_BYTES."""
    try:
        return await read_whole(response, MAX_ERROR_BODY_BYTES) or b""
    except AnswerTooLarge:
        return b""


def raw_response(response: aiohttp.ClientResponse, raw: bytes) -> Response:
    return Response(raw, status_code=response.status, headers=response_headers(response.headers))


def json_response(response: aiohttp.ClientResponse, value: dict[str, Any]) -> Response:
    """`value` as the answer, with the upstream's status and headers (a lone surrogate the
    upstream sent, which UTF-8 cannot hold, is written as its JSON escape)."""
    body = json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace")
    return Response(body, status_code=response.status, headers=response_headers(response.headers))


async def relay_whole(response: aiohttp.ClientResponse, limit: int) -> Response | None:
    """An upstream answer passed on whole (status, headers and body), or None when the
    upstream cut its body; AnswerTooLarge past `limit` bytes."""
    raw = await read_whole(response, limit)
    return None if raw is None else raw_response(response, raw)


async def pass_on(
    session: Pool,
    upstream: str,
    request: Request,
    body: bytes,
    unreachable: Callable[[], Response],
) -> Response:
    """Any request passed on as it is; the answer streamed back as it comes (`unreachable`:
    the answer when the upstream cannot be reached, in the route's error shape, with a log
    line `guard: pass-on status=0 error=... reused=...`)."""
    url = f"{upstream}{request.url.path}"
    if request.url.query:
        url += f"?{request.url.query}"
    try:
        response = await session.request(
            request.method, url, data=body or None, headers=upstream_headers(request)
        )
    except RequestFailed as failed:
        log.info("guard: pass-on status=0 %s", failed.cause)
        return unreachable()

    async def relayed() -> AsyncGenerator[bytes]:
        try:
            async for piece in response.content.iter_any():
                yield piece
        finally:
            response.close()

    return StreamedResponse(
        relayed(), status_code=response.status, headers=response_headers(response.headers)
    )
