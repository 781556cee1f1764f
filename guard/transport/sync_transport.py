"""`GuardTransport`: the guard in-process for an httpx (or httpx2) client.

Generated from guard/transport/async_transport.py by scripts/unasync_transport.py:
edit that module and run the script, never this file.

The transport opens the upstream answer; a stream's flow (`guard.relay.streamed`) runs as
the client reads `GuardedStream`, a whole answer's (`guard.relay.whole`) before the
transport returns. Either does its recovery through the wrapped transport.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterator
from typing import Any, cast

import httpx

from guard.relay import (
    Emit,
    Fault,
    Opened,
    Post,
    Read,
    Refused,
    Reply,
    Settle,
    Whole,
    step,
    streamed,
    whole,
)
from guard.settings import MAX_ANSWER_BYTES
from guard.transport.call import (
    MAX_REST_BYTES,
    TransportCall,
    guarded,
    profile_choice,
)
from guard.transport.libraries import Http, SyncBase, bases, http_for
from guard.wire.faults import CUT_OFF, UNREACHABLE
from guardrail.model_profiles import AUTO, ProfileChoice


class GuardTransport(SyncBase):
    """An httpx transport through the guardrail (see the module docstring)."""

    def __init__(
        self,
        transport: httpx.BaseTransport | None = None,
        *,
        profiles: ProfileChoice | str = AUTO,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._given = transport
        self._defaults: dict[Http, httpx.BaseTransport] = {}
        self._profiles = profile_choice(profiles)
        self._max_answer_bytes = max_answer_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        call = guarded(request, self._profiles)
        if call is None:
            return self._inner(http_for(request)).handle_request(request)
        opened = self._open(call)
        if isinstance(opened, Refused):
            call.log(stream=call.streams)
            return call.error(opened.status, opened.message)
        if opened.status_code >= 300:
            call.log(stream=call.streams)
            return opened  # passed on as it is: the SDK's retry rules apply
        if call.streams:
            stream = _stream_class(call.http)(self, call, opened)
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

    def _inner(self, http: Http) -> httpx.BaseTransport:
        """The wrapped transport: the one given, or the request's library's default."""
        if self._given is not None:
            return self._given
        if http not in self._defaults:
            self._defaults[http] = http.sync_transport()
        return self._defaults[http]

    def _open(
        self, call: TransportCall, body: dict[str, Any] | None = None
    ) -> httpx.Response | Refused:
        """The upstream's answer to the call's request (`body`: the recovery's), its body
        unread; a refusal when there is none to read."""
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

    def _read(self, call: TransportCall, response: httpx.Response) -> bytes | None:
        """A whole body (None when the upstream cut it or it is past the bound)."""
        parts: list[bytes] = []
        size = 0
        pieces = raw_body(response)
        try:
            for piece in pieces:
                size += len(piece)
                if size > self._max_answer_bytes:
                    return None
                parts.append(piece)
        except call.http.errors:
            return None
        finally:
            close_body(response, pieces)
        return b"".join(parts)

    def _whole(self, call: TransportCall, first: httpx.Response) -> httpx.Response:
        raw = self._read(call, first)
        if raw is None:
            return call.error(502, CUT_OFF)
        last = first
        flow = whole(call.api, call.registry, call.body, Whole(first.status_code, raw), call.tally)
        effect, answer = step(flow, None)
        while answer is None:
            assert isinstance(effect, Post)
            opened = self._open(call, effect.body)
            if isinstance(opened, Refused):
                reply = opened
            else:
                last, reply = opened, call.whole_reply(opened, self._read(call, opened))
            effect, answer = step(flow, reply)
        return call.answer(answer, last)

    def recovery_stream(
        self, call: TransportCall, body: dict[str, Any]
    ) -> httpx.Response | Refused:
        """The recovery's upstream stream, open; or why there is none to read."""
        opened = self._open(call, body)
        if isinstance(opened, Refused) and opened.message == UNREACHABLE:
            return Refused(502, CUT_OFF)  # the stream began: to its client, the reply was cut
        if not isinstance(opened, Refused) and opened.status_code >= 300:
            raw = self._read(call, opened) or b""
            return call.refusal(opened, raw)
        return opened


class GuardedStream(httpx.SyncByteStream):
    """The client's stream: the flow's output, its upstream reads and recovery done here;
    `head` reads its first bytes ahead, for an API whose stream may open with an error
    (`Api.first_error`). Iterated again (the openai SDK stops at `[DONE]`, then drains the
    stream for a tenth of a second before it closes it), it goes on where it stopped, and
    once the flow has said everything it reads the upstream body to its end (at most
    MAX_REST_BYTES more), as the SDK reads a body it was given straight: the connection can
    then go back to the pool. Closed, it closes the upstream at once, wherever it was.

    Regression: read once, the SDK's drain got nothing, the upstream body was closed before
    its end, and every streamed request of an async SDK opened a new connection (a TCP, or
    TLS, handshake each) where the SDK alone kept one."""

    def __init__(
        self, transport: GuardTransport, call: TransportCall, first: httpx.Response
    ) -> None:
        self._transport, self._call, self._response = transport, call, first
        self._flow = streamed(call.api, call.registry, call.body, call.tally)
        self._out = self._run()
        self._head: bytes | None = None

    def head(self) -> bytes:
        """The stream's first bytes (b"": it had none), read ahead."""
        self._head = next(self._out, b"")
        return self._head

    def __iter__(self) -> Iterator[bytes]:
        head, self._head = self._head, None
        if head:
            yield head
        elif head is not None:
            return  # the stream had nothing at all
        for data in self._out:
            yield data

    def close(self) -> None:
        self._out.close()
        self._response.close()
        self._call.log(stream=True)

    def _run(self) -> Generator[bytes]:
        pieces = raw_body(self._response)
        reply: Reply = None
        try:
            while True:
                effect, _ = step(self._flow, reply)
                if effect is None:
                    read_rest(pieces, self._call.http.errors)
                    return
                reply = None
                if isinstance(effect, Emit):
                    yield effect.data
                elif isinstance(effect, Read):
                    try:
                        reply = next(pieces, b"")
                    except self._call.http.errors:
                        reply = Fault(CUT_OFF)
                elif isinstance(effect, Settle):
                    self._call.log(stream=True)
                else:
                    close_body(self._response, pieces)
                    opened = self._transport.recovery_stream(self._call, effect.body)
                    if isinstance(opened, Refused):
                        reply = opened
                    else:
                        self._response, pieces, reply = opened, raw_body(opened), Opened()
        finally:
            self._flow.close()
            close_body(self._response, pieces)
            self._call.log(stream=True)


def raw_body(response: httpx.Response) -> Generator[bytes]:
    """The answer's bytes as they arrive; or, from a wrapped transport that read the body
    before it returned the response (httpx.MockTransport does), that body whole.

    Regression: such a response raised httpx.StreamConsumed, read as a cut answer (a 502)."""
    if response.is_stream_consumed:
        yield response.content
        return
    for piece in response.iter_raw():
        yield piece


def read_rest(pieces: Generator[bytes], errors: tuple[type[Exception], ...]) -> None:
    """Read what is left of an upstream body the flow has no more use for (a chat stream's
    end after `[DONE]`), to its end or MAX_REST_BYTES, so its connection can be reused; a
    failure to read it is no failure of the answer."""
    size = 0
    try:
        for piece in pieces:
            size += len(piece)
            if size > MAX_REST_BYTES:
                return
    except errors:
        return


def close_body(response: httpx.Response, pieces: Generator[bytes]) -> None:
    """Close an upstream answer read through `raw_body`, here and now, the response first.

    httpx's and httpcore's own generators under `pieces` are dropped, not closed, when it is
    closed before the body's end (an SDK stops at `[DONE]`), and a dropped generator that
    awaits while it closes breaks the task it is collected in (where the event loop's thread
    has no async generator hooks, as in a Chainlit page's handler). With the response closed
    first, their closing finds the connection closed and awaits nothing.

    Regression: closed the other way round, the openai SDK's close after `[DONE]` raised
    "Attempted to exit a cancel scope that isn't the current task's current cancel scope"."""
    response.close()
    pieces.close()


@functools.cache
def _stream_class(http: Http) -> type[GuardedStream]:
    """GuardedStream as a stream of `http`'s library."""
    made = type("GuardedStream", bases(GuardedStream, http.sync_stream), {})
    return cast(type[GuardedStream], made)
