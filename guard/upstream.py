"""The guard proxy's upstream side, shared by every route it guards or passes on.

The proxy's settings, the one upstream session, which headers go each way, reading a whole
answer that may be cut or not be JSON, passing a request on as it is, and `GuardedCall`:
one guarded request's counts, log line and flow (error status passed on, whole answer or
streamed rounds with the one recovery). A route supplies what is its own: log name,
stream test, error shape, stream relay, guards and recovery request.

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
  reply's texts by `guard.reply.MAX_TEXTS`; past a bound a stream ends with the route's
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

import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import aiohttp
from starlette.requests import Request
from starlette.responses import Response

from guard.call_log import REQUEST_ID, call_line, request_id
from guard.reply import TooManyTexts, WholeReply
from guard.wire.faults import BOUNDS_BROKEN, CUT_OFF, UNREACHABLE, fault_message
from guardrail.model_profiles import AUTO, ProfileChoice
from guardrail.patterns import Registry
from guardrail.policy import MALFORMED_REPLY, strip_warning
from servekit.allowed_hosts import HostPolicy
from servekit.hop_by_hop import end_to_end
from servekit.json_codec import parse_object, utf8_repaired
from servekit.limits import LOCAL_ONLY
from servekit.pool import POOL_IDLE_S, Pool, RequestFailed
from servekit.sse import DEFAULT_MAX_LINE_BYTES
from servekit.streamed import StreamedResponse

log = logging.getLogger("guard")

UPSTREAM_ERRORS = (RequestFailed, aiohttp.ClientError, OSError, TimeoutError)
STREAM_FAULTS = (*UPSTREAM_ERRORS, *BOUNDS_BROKEN)
"""What ends a stream early: a cut, or a bound broken (`fault_message` says which)."""
IDENTITY_CODINGS = ("", "identity")
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The most of a whole (not streamed) upstream answer the proxy reads: a model's answer is
kilobytes, and a larger body is a fault answered with a 502, never held whole in memory."""
MAX_ERROR_BODY_BYTES = 64 * 1024
"""The most of an upstream refusal read for its message."""
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
OWN_HEADERS = ("host", "content-length", "accept-encoding", "date", "server")
"""Headers the proxy drops besides the hop-by-hop ones (servekit.hop_by_hop): its HTTP client
and its server write their own, and Accept-Encoding is set per request (`upstream_headers`)."""


@dataclass(frozen=True)
class GuardSettings:
    upstream: str  # the model server's base URL, e.g. http://127.0.0.1:8080 (no /v1)
    profiles: ProfileChoice = AUTO  # `auto`: the registry follows each request's model name
    connect_timeout_s: float = 10.0
    keepalive_s: float = 15.0  # a `: keep-alive` comment after this long without a byte
    pool_idle_s: float = POOL_IDLE_S  # how long an idle upstream connection is kept for reuse
    max_answer_bytes: int = MAX_ANSWER_BYTES  # a whole answer past it is a 502
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES  # a stream's line or event past it ends it
    hosts: HostPolicy = LOCAL_ONLY  # the Host names the proxy answers to (DNS rebinding)

    def registry_for(self, body: dict[str, Any]) -> Registry:
        """What the guardrail strips from the answer to `body` (its `model` under auto)."""
        return self.profiles.registry(body.get("model"))


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


class StreamRound(Protocol):
    """A streamed reply's guard, as the shared streamed flow sees it."""

    recovering: bool  # the reply ended needing the one recovery


S = TypeVar("S", bound=StreamRound)


class GuardedCall:
    """One guarded request: its upstream requests, the counts for its log, the log line, and
    the flow every route follows (`answer`); a route fills in what is its own."""

    route = ""  # the log line's name for the route

    def __init__(
        self,
        session: Pool,
        url: str,
        headers: dict[str, str],
        settings: GuardSettings,
    ) -> None:
        self.session, self.url, self.headers, self.settings = session, url, headers, settings
        self.request_id = headers.get(REQUEST_ID, "-")  # for the log line
        self.started = time.perf_counter()
        self.stripped = 0
        self.recoveries = 0
        self.status = 0
        self.failed = False
        self.cause = ""  # the log fields of an upstream request that failed, if one did
        self.model: object = None  # the request's `model`, for the log's profiles= under auto

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

    def count(self, stripped: int, first_span: str, round_number: int) -> None:
        """Add one upstream reply's stripped characters, with the warning when there are any."""
        if stripped:
            self.stripped += stripped
            log.warning(strip_warning(stripped, round_number, first_span))

    def log(self, route: str, *, stream: bool) -> None:
        """`guard: ROUTE status=N stream=B retries=N total_ms=N scaffold_stripped=N
        profiles=X request_id=ID`, with the cause after the status when an upstream request
        failed (`status=0 error=... reused=...` when the first did). X is the setting, or
        under auto the families the request's model matched (ProfileChoice.describe); ID the
        `X-Request-Id` its upstream requests carried. Fields are only ever added at the end,
        so that parsers of the ones before keep working."""
        total_ms = round((time.perf_counter() - self.started) * 1000)
        log.info(
            call_line(
                route,
                status=self.status,
                cause=self.cause,
                stream=stream,
                retries=self.recoveries,
                total_ms=total_ms,
                stripped=self.stripped,
                profiles=self.settings.profiles.describe(self.model),
                request_id=self.request_id,
            )
        )

    # --- the flow every route follows -------------------------------------------------------

    async def answer(self, body: dict[str, Any]) -> Response:
        """The client's answer to `body`: an unreachable upstream is a 502, an upstream error
        status is passed on as it is, and a stream or a whole answer goes through the
        guardrail."""
        self.model = body.get("model")
        stream = self.streams(body)
        try:
            response = await self.post(body)
        except UPSTREAM_ERRORS:
            self.log(self.route, stream=stream)
            return self.error(502, UNREACHABLE)
        except Unguardable as exc:
            self.log(self.route, stream=stream)
            return self.error(502, str(exc))
        self.status = response.status
        if response.status >= 300:
            self.log(self.route, stream=stream)
            return await self.relayed(response)
        if stream:
            return await self.streamed(body, response)
        try:
            return await self.whole(body, response)
        finally:
            self.log(self.route, stream=False)

    async def whole(self, body: dict[str, Any], response: aiohttp.ClientResponse) -> Response:
        """A whole answer through its guard; a reply that was nothing but markup gets the one
        recovery, whose answer is the client's (a 502 when it stayed empty, G3)."""
        first = await self._through_guard(body, response, None)
        if isinstance(first, Response):
            return first
        guard, answer = first
        if not guard.wants_recovery:
            return answer
        self.recoveries += 1
        try:
            recovery = await self.post(self.recovery_body(body))
        except UPSTREAM_ERRORS:
            return self.error(502, UNREACHABLE)
        except Unguardable as exc:
            return self.error(502, str(exc))
        if recovery.status >= 300:
            return await self.relayed(recovery)
        second = await self._through_guard(body, recovery, guard)
        if isinstance(second, Response):
            return second
        guard, answer = second
        return self.error(502, MALFORMED_REPLY, "malformed_reply") if guard.malformed else answer

    async def _through_guard(
        self, body: dict[str, Any], response: aiohttp.ClientResponse, follows: WholeReply | None
    ) -> Response | tuple[WholeReply, Response]:
        """One whole upstream answer through a fresh guard (`follows`: the reply it
        recovers), counted as its round: the guard and the client's answer (the upstream's
        bytes when the guard changed nothing), or the answer to a body that was not read."""
        read = await self.read(response)
        if isinstance(read, Response):
            return read
        raw, answer = read
        guard = self.whole_guard(body, follows)
        try:
            changed = guard.filter(answer)
        except TooManyTexts as exc:
            return self.error(502, fault_message(exc))
        self.count(guard.stripped_chars, guard.first_span, 1 if follows is None else 2)
        return guard, json_response(response, answer) if changed else raw_response(response, raw)

    async def recovered_stream(
        self,
        body: dict[str, Any],
        response: aiohttp.ClientResponse,
        guard: Callable[[S | None], S],
        relayed: Callable[[aiohttp.ClientResponse, S, int], AsyncIterator[bytes]],
        refused: Callable[[S, aiohttp.ClientResponse | str], Awaitable[bytes]],
    ) -> AsyncGenerator[bytes]:
        """A streamed answer's flow, every route's: the first upstream stream through
        `guard(None)`; when the round asks for it (`recovers`), the one recovery request,
        whose stream goes through `guard(first)` into the same client stream. `relayed`
        carries one upstream stream through its guard (round 1 or 2); a recovery request
        that fails ends the stream with `refused(first, recovery)`, the route's in-band
        error (recovery a message of the proxy's own, a 502's, when there is no answer to
        read one from: the upstream could not be reached, or answered compressed)."""
        first = guard(None)
        async for piece in relayed(response, first, 1):
            yield piece
        if not self.recovers(first):
            return
        self.recoveries += 1
        try:
            recovery = await self.post(self.recovery_body(body))
        except UPSTREAM_ERRORS:
            yield await refused(first, CUT_OFF)
            return
        except Unguardable as exc:
            yield await refused(first, str(exc))
            return
        if recovery.status >= 300:
            yield await refused(first, recovery)
            return
        async for piece in relayed(recovery, guard(first), 2):
            yield piece

    def recovers(self, first: StreamRound) -> bool:
        """Whether a streamed first round goes on to the one recovery: it asked for it, and
        the stream did not end in a failure the client was already told of."""
        return first.recovering and not self.failed

    async def read(
        self, response: aiohttp.ClientResponse
    ) -> tuple[bytes, dict[str, Any]] | Response:
        """A whole answer's bytes and JSON, or the client's answer when there is none to
        filter: a 502 for a body the upstream cut, the body as it came when it is not a JSON
        object."""
        try:
            raw = await read_whole(response, self.settings.max_answer_bytes)
        except AnswerTooLarge as exc:
            return self.error(502, str(exc))
        if raw is None:
            return self.error(502, CUT_OFF)
        value = parse_object(raw)
        if value is None and (repaired := utf8_repaired(raw)) is not raw:
            raw, value = repaired, parse_object(repaired)
        if value is None:
            return raw_response(response, raw)
        return raw, value

    async def relayed(self, response: aiohttp.ClientResponse) -> Response:
        """An upstream answer passed on whole: status, headers and body (a 502 when the
        upstream cut its body)."""
        try:
            return await relay(response, self.settings.max_answer_bytes) or self.error(502, CUT_OFF)
        except AnswerTooLarge as exc:
            return self.error(502, str(exc))

    # --- what each route says -------------------------------------------------------------

    def streams(self, body: dict[str, Any]) -> bool:
        """Whether `body` asks for a streamed answer."""
        raise NotImplementedError

    def error(self, status: int, message: str, code: str | None = None) -> Response:
        """The route's error answer (`code`: a machine-readable code, where its shape has one)."""
        raise NotImplementedError

    async def streamed(self, body: dict[str, Any], response: aiohttp.ClientResponse) -> Response:
        """The client's answer to a streamed upstream answer (status below 300)."""
        raise NotImplementedError

    def whole_guard(self, body: dict[str, Any], follows: WholeReply | None) -> WholeReply:
        """The guard of a whole answer to `body` (`follows`: the first, for the recovery's)."""
        raise NotImplementedError

    def recovery_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The one recovery request: `body` with the correction in, no tools (G2)."""
        raise NotImplementedError


async def guarded(
    request: Request,
    settings: GuardSettings,
    session: UpstreamSession,
    call: Callable[[Pool, str, dict[str, str], GuardSettings], GuardedCall],
    unreachable: Callable[[], Response],
) -> Response:
    """A guarded route's answer to `request`: `call(pool, url, headers, settings)`'s, the
    upstream's answer asked for uncompressed. A body that is not a JSON object (not JSON,
    nested past the parser's limit, an array) is not ours to judge: it is passed on as it is
    (`unreachable`: the answer when the upstream cannot be reached, in the route's shape)."""
    upstream = settings.upstream.rstrip("/")
    raw = await request.body()
    body = parse_object(raw)
    if body is None:
        return await pass_on(session(), upstream, request, raw, unreachable)
    headers = upstream_headers(request, accept_encoding="identity")
    headers = {k: v for k, v in headers.items() if k.lower() != REQUEST_ID.lower()}
    headers[REQUEST_ID] = request_id(request.headers.get(REQUEST_ID))
    url = f"{upstream}{request.url.path}"
    return await call(session(), url, headers, settings).answer(body)


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


async def relay(response: aiohttp.ClientResponse, limit: int) -> Response | None:
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
