"""The guard in-process: httpx transports that apply what the guard proxy applies.

    client = openai.AsyncOpenAI(
        base_url=..., http_client=httpx.AsyncClient(transport=AsyncGuardTransport())
    )

`AsyncGuardTransport` and `GuardTransport` wrap any httpx transport (a default one when
none is given). A request to an API the guard guards (`guard.wire.apis`: chat completions,
the Responses API, Anthropic's Messages, Ollama's chat and generate; streamed or whole)
goes through the wrapped transport and its answer comes back through the same flow as
the proxy's (`guard.relay`): markup filtered by the registry for the request's model name
(`auto`, or the `profiles` given), reasoning and tool calls untouched, the one recovery as
a second request through the wrapped transport, the malformed reply as the API's own error
(so the SDK raises its usual exception). Each guarded request logs its line on the
`guard.transport` logger (`scaffold_stripped=N`, guard/call_log.py), and a warning with
the first stripped span for each reply that had markup. Anything else passes through
untouched.

Deliberate choices:
- A guarded request goes upstream asking for an uncompressed answer; one that comes
  compressed all the same is refused with the API's 502 rather than inflated.
- The transports only do I/O: every decision is the flow's, so they keep no state
  between requests and are safe to share.
- An upstream error status is passed on as it is, so the SDK's own retry rules apply.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpx

from guard.call_log import REQUEST_ID, call_line, request_id
from guard.relay import (
    Answer,
    Emit,
    Fault,
    Opened,
    Post,
    Read,
    Refused,
    Reply,
    Tally,
    Whole,
    streamed,
    whole,
)
from guard.wire.api import Api
from guard.wire.apis import api_for
from guard.wire.faults import CUT_OFF, UNREACHABLE
from guardrail.model_profiles import AUTO, ProfileChoice, parse_profiles
from guardrail.policy import strip_warning
from servekit.json_codec import parse_object

__all__ = ["AsyncGuardTransport", "GuardTransport"]

log = logging.getLogger("guard.transport")

# The transports are httpx2's too (its fork, which the anthropic SDK requires of a client)
# where it is installed: a client of either library takes them.
if TYPE_CHECKING:
    import httpx2

    # Each request is answered in its own library's types, which the checker cannot see.
    class _AsyncBase(httpx.AsyncBaseTransport, httpx2.AsyncBaseTransport): ...  # pyright: ignore[reportIncompatibleMethodOverride]

    class _SyncBase(httpx.BaseTransport, httpx2.BaseTransport): ...  # pyright: ignore[reportIncompatibleMethodOverride]

else:
    try:
        import httpx2
    except ImportError:
        _AsyncBase, _SyncBase = httpx.AsyncBaseTransport, httpx.BaseTransport
    else:

        class _AsyncBase(httpx.AsyncBaseTransport, httpx2.AsyncBaseTransport):
            pass

        class _SyncBase(httpx.BaseTransport, httpx2.BaseTransport):
            pass


MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The most of a whole answer read (a model's answer is kilobytes): past it, a 502."""
IDENTITY_CODINGS = ("", "identity")
DROPPED_HEADERS = ("content-length", "content-encoding", "transfer-encoding")
"""The upstream's headers a guarded answer goes without: its body is the guard's."""

T = TypeVar("T")


def _profiles(profiles: ProfileChoice | str) -> ProfileChoice:
    return parse_profiles(profiles) if isinstance(profiles, str) else profiles


@dataclass
class _Call:
    """One guarded request: the API it speaks, its body, its upstream requests, its log."""

    api: Api
    request: httpx.Request
    body: dict[str, Any]
    profiles: ProfileChoice
    http: _Http
    tally: Tally = field(default_factory=Tally)
    status: int = 0
    cause: str = ""
    started: float = field(default_factory=time.perf_counter)
    logged: bool = False

    def __post_init__(self) -> None:
        headers = self.http.headers(self.request.headers)
        headers[REQUEST_ID] = request_id(headers.get(REQUEST_ID))
        headers["Accept-Encoding"] = "identity"
        for name in ("content-length", "transfer-encoding"):
            headers.pop(name, None)
        self.headers = headers
        self.registry = self.profiles.registry(self.body.get("model"))

    @property
    def streams(self) -> bool:
        return self.api.streams(self.body)

    def upstream_request(self, body: dict[str, Any] | None = None) -> httpx.Request:
        """The request upstream: the client's own bytes, or `body` (the recovery's)."""
        content = self.request.content if body is None else json.dumps(body).encode()
        return self.http.request(
            self.request.method,
            self.request.url,
            headers=self.headers,
            content=content,
            extensions=self.request.extensions,
        )

    def refusal(self, response: httpx.Response, raw: bytes) -> Refused:
        status = response.status_code
        return Refused(status, self.api.refusal_message(raw, status), raw)

    def whole_reply(self, response: httpx.Response, raw: bytes | None) -> Reply:
        """What the whole flow is told of the recovery's answer `raw` (None: cut)."""
        if raw is None:
            return Refused(502, CUT_OFF)
        if response.status_code >= 300:
            return self.refusal(response, raw)
        return Whole(response.status_code, raw)

    def unguardable(self, response: httpx.Response) -> Refused | None:
        """A refusal for an answer compressed though asked for uncompressed, or None."""
        coding = response.headers.get("Content-Encoding", "").strip().lower()
        if coding in IDENTITY_CODINGS:
            return None
        self.cause = "error=Unguardable"
        return Refused(
            502,
            f"The model server answered with Content-Encoding {coding}, though the guard"
            " asked for identity; the guard does not decompress answers.",
        )

    def error(self, status: int, message: str) -> httpx.Response:
        """The API's own error answer."""
        body = self.api.error_body(status, message, None)
        return self.http.response(
            status, headers={"Content-Type": "application/json"}, content=body
        )

    def answer(self, answer: Answer, upstream: httpx.Response) -> httpx.Response:
        """The client's whole answer: the upstream's headers, with the guard's body."""
        headers = self.kept(upstream.headers) if answer.changed else upstream.headers
        return self.http.response(answer.status, headers=headers, content=answer.body)

    def stream_response(
        self, upstream: httpx.Response, stream: httpx.AsyncByteStream | httpx.SyncByteStream
    ) -> httpx.Response:
        return self.http.response(
            upstream.status_code,
            headers=self.kept(upstream.headers),
            stream=stream,
            extensions=upstream.extensions,
        )

    def kept(self, headers: httpx.Headers) -> httpx.Headers:
        """The upstream's headers but those of a body the guard rewrote."""
        kept = self.http.headers(headers)
        for name in DROPPED_HEADERS:
            kept.pop(name, None)
        return kept

    def log(self, *, stream: bool) -> None:
        """The request's log line (and its strip warnings), written once."""
        if self.logged:
            return
        self.logged = True
        for round_number, stripped, span in self.tally.spans:
            log.warning(strip_warning(stripped, round_number, span))
        log.info(
            call_line(
                self.api.name,
                status=self.status,
                cause=self.cause,
                stream=stream,
                retries=self.tally.recoveries,
                total_ms=round((time.perf_counter() - self.started) * 1000),
                stripped=self.tally.stripped,
                profiles=self.profiles.describe(self.body.get("model")),
                request_id=self.headers[REQUEST_ID],
            )
        )


def _guarded(request: httpx.Request, profiles: ProfileChoice) -> _Call | None:
    """The guarded call `request` starts, or None when it is not the guard's to judge (an
    API the guard does not guard, a body that is not a JSON object): passed on as it is."""
    api = api_for(request.method, request.url.path)
    if api is None:
        return None
    body = parse_object(request.content)
    return None if body is None else _Call(api, request, body, profiles, _http_for(request))


def _finished(flow: Generator[Any, Reply, T], reply: Reply) -> tuple[Any, None] | tuple[None, T]:
    """The flow's next effect after `reply`, or its result once it returned."""
    try:
        return flow.send(reply), None
    except StopIteration as stop:
        return None, stop.value


# --- async ---------------------------------------------------------------------------------------


class AsyncGuardTransport(_AsyncBase):
    """An httpx async transport through the guardrail (see the module docstring)."""

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        profiles: ProfileChoice | str = AUTO,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._given = transport
        self._defaults: dict[_Http, httpx.AsyncBaseTransport] = {}
        self._profiles = _profiles(profiles)
        self._max_answer_bytes = max_answer_bytes

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        call = _guarded(request, self._profiles)
        if call is None:
            return await self._inner(_http_for(request)).handle_async_request(request)
        opened = await self._open(call)
        if isinstance(opened, Refused):
            call.log(stream=call.streams)
            return call.error(opened.status, opened.message)
        if opened.status_code >= 300:
            call.log(stream=call.streams)
            return opened  # passed on as it is: the SDK's retry rules apply
        if call.streams:
            stream = call.http.async_stream(self, call, opened)
            error = call.api.first_error
            if error is not None and (message := error(await stream.head())) is not None:
                await stream.aclose()
                return call.error(502, message)
            return call.stream_response(opened, stream)
        try:
            return await self._whole(call, opened)
        finally:
            call.log(stream=False)

    async def aclose(self) -> None:
        for inner in {id(t): t for t in (self._given, *self._defaults.values()) if t}.values():
            await inner.aclose()

    def _inner(self, http: _Http) -> httpx.AsyncBaseTransport:
        """The wrapped transport: the one given, or the request's library's default."""
        if self._given is not None:
            return self._given
        if http not in self._defaults:
            self._defaults[http] = http.async_transport()
        return self._defaults[http]

    async def _open(
        self, call: _Call, body: dict[str, Any] | None = None
    ) -> httpx.Response | Refused:
        """The upstream's answer to the call's request (`body`: the recovery's), its body
        unread; a refusal when there is none to read."""
        try:
            response = await self._inner(call.http).handle_async_request(
                call.upstream_request(body)
            )
        except call.http.errors as exc:
            call.cause = f"error={type(exc).__name__}"
            return Refused(502, UNREACHABLE)
        call.status = call.status or response.status_code
        if response.status_code < 300 and (refused := call.unguardable(response)) is not None:
            await response.aclose()
            return refused
        return response

    async def _read(self, call: _Call, response: httpx.Response) -> bytes | None:
        """A whole body (None when the upstream cut it or it is past the bound)."""
        parts: list[bytes] = []
        size = 0
        try:
            async for piece in response.aiter_raw():
                size += len(piece)
                if size > self._max_answer_bytes:
                    return None
                parts.append(piece)
        except call.http.errors:
            return None
        finally:
            await response.aclose()
        return b"".join(parts)

    async def _whole(self, call: _Call, first: httpx.Response) -> httpx.Response:
        raw = await self._read(call, first)
        if raw is None:
            return call.error(502, CUT_OFF)
        last = first
        flow = whole(call.api, call.registry, call.body, Whole(first.status_code, raw), call.tally)
        effect, answer = _finished(flow, None)
        while answer is None:
            assert isinstance(effect, Post)
            opened = await self._open(call, effect.body)
            if isinstance(opened, Refused):
                reply = opened
            else:
                last, reply = opened, call.whole_reply(opened, await self._read(call, opened))
            effect, answer = _finished(flow, reply)
        return call.answer(answer, last)

    async def recovery_stream(self, call: _Call, body: dict[str, Any]) -> httpx.Response | Refused:
        """The recovery's upstream stream, open; or why there is none to read."""
        opened = await self._open(call, body)
        if not isinstance(opened, Refused) and opened.status_code >= 300:
            raw = await self._read(call, opened) or b""
            return call.refusal(opened, raw)
        return opened


class _AsyncGuardedStream(httpx.AsyncByteStream):
    """The client's stream: the flow's output, its upstream reads and recovery done here.
    It is read once (an SDK that drains a body it read gets nothing more); `head` reads its
    first bytes ahead, for an API whose stream may open with an error (`Api.first_error`)."""

    def __init__(self, transport: AsyncGuardTransport, call: _Call, first: httpx.Response) -> None:
        self._transport, self._call, self._response = transport, call, first
        self._flow = streamed(call.api, call.registry, call.body, call.tally)
        self._out = self._run()
        self._head: bytes | None = None
        self._taken = False

    async def head(self) -> bytes:
        """The stream's first bytes (b"": it had none), read ahead."""
        self._head = await anext(self._out, b"")
        return self._head

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._taken:
            return
        self._taken = True
        if self._head is not None:
            if not self._head:
                return
            yield self._head
        async for data in self._out:
            yield data

    async def aclose(self) -> None:
        await self._out.aclose()
        await self._response.aclose()
        self._call.log(stream=True)

    async def _run(self) -> AsyncGenerator[bytes]:
        pieces = self._response.aiter_raw()
        reply: Reply = None
        try:
            while True:
                effect, _ = _finished(self._flow, reply)
                if effect is None:
                    return
                reply = None
                if isinstance(effect, Emit):
                    yield effect.data
                elif isinstance(effect, Read):
                    try:
                        reply = await anext(pieces, b"")
                    except self._call.http.errors:
                        reply = Fault(CUT_OFF)
                else:
                    assert isinstance(effect, Post)
                    await self._response.aclose()
                    opened = await self._transport.recovery_stream(self._call, effect.body)
                    if isinstance(opened, Refused):
                        reply = opened
                    else:
                        self._response, pieces, reply = opened, opened.aiter_raw(), Opened()
        finally:
            self._flow.close()
            await self._response.aclose()
            self._call.log(stream=True)


# --- sync ----------------------------------------------------------------------------------------


class GuardTransport(_SyncBase):
    """An httpx transport through the guardrail (see the module docstring)."""

    def __init__(
        self,
        transport: httpx.BaseTransport | None = None,
        *,
        profiles: ProfileChoice | str = AUTO,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._given = transport
        self._defaults: dict[_Http, httpx.BaseTransport] = {}
        self._profiles = _profiles(profiles)
        self._max_answer_bytes = max_answer_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        call = _guarded(request, self._profiles)
        if call is None:
            return self._inner(_http_for(request)).handle_request(request)
        opened = self._open(call)
        if isinstance(opened, Refused):
            call.log(stream=call.streams)
            return call.error(opened.status, opened.message)
        if opened.status_code >= 300:
            call.log(stream=call.streams)
            return opened
        if call.streams:
            stream = call.http.sync_stream(self, call, opened)
            error = call.api.first_error
            if error is not None and (message := error(stream.head())) is not None:
                stream.close()
                return call.error(502, message)
            return call.stream_response(opened, stream)
        try:
            return self._whole(call, opened)
        finally:
            call.log(stream=False)

    def close(self) -> None:
        for inner in {id(t): t for t in (self._given, *self._defaults.values()) if t}.values():
            inner.close()

    def _inner(self, http: _Http) -> httpx.BaseTransport:
        """The wrapped transport: the one given, or the request's library's default."""
        if self._given is not None:
            return self._given
        if http not in self._defaults:
            self._defaults[http] = http.sync_transport()
        return self._defaults[http]

    def _open(self, call: _Call, body: dict[str, Any] | None = None) -> httpx.Response | Refused:
        try:
            response = self._inner(call.http).handle_request(call.upstream_request(body))
        except call.http.errors as exc:
            call.cause = f"error={type(exc).__name__}"
            return Refused(502, UNREACHABLE)
        call.status = call.status or response.status_code
        if response.status_code < 300 and (refused := call.unguardable(response)) is not None:
            response.close()
            return refused
        return response

    def _read(self, call: _Call, response: httpx.Response) -> bytes | None:
        parts: list[bytes] = []
        size = 0
        try:
            for piece in response.iter_raw():
                size += len(piece)
                if size > self._max_answer_bytes:
                    return None
                parts.append(piece)
        except call.http.errors:
            return None
        finally:
            response.close()
        return b"".join(parts)

    def _whole(self, call: _Call, first: httpx.Response) -> httpx.Response:
        raw = self._read(call, first)
        if raw is None:
            return call.error(502, CUT_OFF)
        last = first
        flow = whole(call.api, call.registry, call.body, Whole(first.status_code, raw), call.tally)
        effect, answer = _finished(flow, None)
        while answer is None:
            assert isinstance(effect, Post)
            opened = self._open(call, effect.body)
            if isinstance(opened, Refused):
                reply = opened
            else:
                last, reply = opened, call.whole_reply(opened, self._read(call, opened))
            effect, answer = _finished(flow, reply)
        return call.answer(answer, last)

    def recovery_stream(self, call: _Call, body: dict[str, Any]) -> httpx.Response | Refused:
        opened = self._open(call, body)
        if not isinstance(opened, Refused) and opened.status_code >= 300:
            raw = self._read(call, opened) or b""
            return call.refusal(opened, raw)
        return opened


class _GuardedStream(httpx.SyncByteStream):
    """`_AsyncGuardedStream`, sync."""

    def __init__(self, transport: GuardTransport, call: _Call, first: httpx.Response) -> None:
        self._transport, self._call, self._response = transport, call, first
        self._flow = streamed(call.api, call.registry, call.body, call.tally)
        self._out = self._run()
        self._head: bytes | None = None
        self._taken = False

    def head(self) -> bytes:
        self._head = next(self._out, b"")
        return self._head

    def __iter__(self) -> Iterator[bytes]:
        if self._taken:
            return
        self._taken = True
        if self._head is not None:
            if not self._head:
                return
            yield self._head
        yield from self._out

    def close(self) -> None:
        self._out.close()
        self._response.close()
        self._call.log(stream=True)

    def _run(self) -> Generator[bytes]:
        pieces = self._response.iter_raw()
        reply: Reply = None
        try:
            while True:
                effect, _ = _finished(self._flow, reply)
                if effect is None:
                    return
                reply = None
                if isinstance(effect, Emit):
                    yield effect.data
                elif isinstance(effect, Read):
                    try:
                        reply = next(pieces, b"")
                    except self._call.http.errors:
                        reply = Fault(CUT_OFF)
                else:
                    assert isinstance(effect, Post)
                    self._response.close()
                    opened = self._transport.recovery_stream(self._call, effect.body)
                    if isinstance(opened, Refused):
                        reply = opened
                    else:
                        self._response, pieces, reply = opened, opened.iter_raw(), Opened()
        finally:
            self._flow.close()
            self._response.close()
            self._call.log(stream=True)


# --- the httpx-like libraries ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Http:
    """One httpx-like library's classes: httpx, or httpx2 (its fork, which the anthropic
    SDK requires of a client): a request is answered in its own library's types."""

    request: type[httpx.Request]
    response: type[httpx.Response]
    headers: type[httpx.Headers]
    errors: tuple[type[Exception], ...]
    async_stream: type[_AsyncGuardedStream]
    sync_stream: type[_GuardedStream]
    async_transport: Callable[[], httpx.AsyncBaseTransport]
    sync_transport: Callable[[], httpx.BaseTransport]


_HTTPX = _Http(
    httpx.Request,
    httpx.Response,
    httpx.Headers,
    (httpx.TransportError, httpx.StreamError),
    _AsyncGuardedStream,
    _GuardedStream,
    httpx.AsyncHTTPTransport,
    httpx.HTTPTransport,
)


@functools.cache
def _httpx2() -> _Http | None:
    """httpx2's classes, when it is installed."""
    try:
        import httpx2
    except ImportError:
        return None

    class AsyncStream(_AsyncGuardedStream, httpx2.AsyncByteStream):
        pass

    class SyncStream(_GuardedStream, httpx2.SyncByteStream):
        pass

    return _Http(
        cast(type[httpx.Request], httpx2.Request),
        cast(type[httpx.Response], httpx2.Response),
        cast(type[httpx.Headers], httpx2.Headers),
        (httpx2.TransportError, httpx2.StreamError),
        AsyncStream,
        SyncStream,
        cast(Callable[[], httpx.AsyncBaseTransport], httpx2.AsyncHTTPTransport),
        cast(Callable[[], httpx.BaseTransport], httpx2.HTTPTransport),
    )


def _http_for(request: object) -> _Http:
    """The library `request` is of."""
    if isinstance(request, httpx.Request):
        return _HTTPX
    other = _httpx2()
    if other is not None and isinstance(request, other.request):
        return other
    raise TypeError(f"not an httpx or httpx2 request: {type(request).__name__}")
