"""Server-sent events for the chat stream: the frame encoding (pure) and the response.

Every frame is one `data: {json}` line and a blank line, so model text can never break or
forge a frame. `EventStream` adds what a long turn needs: a `: keep-alive` comment after
`keepalive_s` of silence, a gone or stalled client noticed (which closes the upstream
stream), and `OpenStreams.end_all` ending every open stream with its own last frame when
the server shuts down, rather than cutting it at the graceful-shutdown timeout.

Deliberate choices:
- U+2028, U+2029 and U+0085 go as escapes: SSE does not break lines there, but
  `str.splitlines` and httpx's `aiter_lines` do. Other characters are kept as they are.
- This is our own code, not sse-starlette's `EventSourceResponse`: that cost about a
  quarter of a clean turn's CPU (four tasks and a timeout per send; docs/benchmarks.md).
  Here a response is one disconnect-watch task and one keep-alive timer.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from scaffold_guard.app.frames import Frame

KEEPALIVE = b": keep-alive\n\n"
SEND_TIMEOUT_S = 30.0
"""How long one send to the client may block (its socket buffer full) before the turn ends."""
MEDIA_TYPE = "text/event-stream; charset=utf-8"

log = logging.getLogger(__name__)

_LINE_BREAKS_BESIDES_CR_LF = str.maketrans(
    {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"}
)


def encode(frame: Frame) -> bytes:
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
    # A lone surrogate (a model can send "\\ud800" in its JSON) goes as its JSON escape.
    data = text.translate(_LINE_BREAKS_BESIDES_CR_LF).encode(errors="backslashreplace")
    return b"data: " + data + b"\n\n"


async def encode_all(frames: AsyncGenerator[Frame]) -> AsyncGenerator[bytes]:
    """The frames encoded; closing this closes `frames` (the turn) at once, not at garbage
    collection."""
    async with aclosing(frames):
        async for frame in frames:
            yield encode(frame)


class OpenStreams:
    """The event streams under way in one app, so a shutdown can end them (`end_all`)."""

    def __init__(self) -> None:
        self._streams: set[EventStream] = set()

    def __len__(self) -> int:
        return len(self._streams)

    def add(self, stream: EventStream) -> None:
        self._streams.add(stream)

    def discard(self, stream: EventStream) -> None:
        self._streams.discard(stream)

    def end_all(self) -> None:
        """Ask every open stream to end now, with its last frame (from the event loop)."""
        for stream in list(self._streams):
            stream.end()


class SendTimeoutError(Exception):
    """A send to the client did not complete within the stream's send timeout."""


class EventStream(Response):
    """An ASGI response streaming already-encoded SSE `chunks` (see the module docstring).

    A Starlette `Response` only so that FastAPI passes it through as the route's response;
    none of Response's body handling is used.
    """

    def __init__(
        self,
        chunks: AsyncGenerator[bytes],
        *,
        headers: Mapping[str, str],
        keepalive_s: float,
        send_timeout_s: float = SEND_TIMEOUT_S,
        open_streams: OpenStreams | None = None,
        last_words: Callable[[], bytes] | None = None,
    ) -> None:
        """`last_words` is the chunk sent when the stream is ended early by `end` (a
        server shutdown), before the end of the body."""
        self._chunks = chunks
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", MEDIA_TYPE.encode()),
            (b"x-accel-buffering", b"no"),  # nginx: pass each frame on at once
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()),
        ]
        self._keepalive_s = keepalive_s
        self._send_timeout_s = send_timeout_s
        self._lock = asyncio.Lock()  # one message at a time: frames and keep-alives
        self._last_sent = 0.0
        self._open_streams = open_streams
        self._last_words = last_words
        self._host: asyncio.Task[object] | None = None
        self._started = False
        self._finished = False
        self._client_gone = False
        self._ending = False
        self._cancelled = False  # by this response, once: a client gone, or `end`
        self._keepalive: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        host = self._host = asyncio.current_task()
        assert host is not None  # an ASGI app runs in a task
        loop = asyncio.get_running_loop()
        watcher = loop.create_task(self._watch(receive))
        if self._keepalive_s > 0:
            self._timer = loop.call_later(self._keepalive_s, self._on_timer, send)
        if self._open_streams is not None:
            self._open_streams.add(self)
        try:
            await self._stream(send)
        except asyncio.CancelledError:
            if not self._cancelled or host.uncancel() > 0:
                raise  # cancelled from outside, not (only) by this response
            if self._ending and not self._client_gone:
                await self._say_last_words(send)
        except SendTimeoutError:
            pass  # logged; the server closes the connection of an unfinished response
        finally:
            self._finished = True
            if self._open_streams is not None:
                self._open_streams.discard(self)
            watcher.cancel()
            if self._timer is not None:
                self._timer.cancel()
            if self._keepalive is not None:
                self._keepalive.cancel()

    def end(self) -> None:
        """End the stream now: the frames are closed (the turn with them), then the last
        words and the end of the body go out. Nothing happens once it has finished."""
        if not self._finished:
            self._ending = True
            self._cancel()

    def _client_left(self) -> None:
        if not self._finished:
            self._client_gone = True
            self._cancel()

    def _cancel(self) -> None:
        if self._host is not None and not self._cancelled:
            self._cancelled = True
            self._host.cancel()

    async def _say_last_words(self, send: Send) -> None:
        self._finished = True
        if not self._started:
            return  # the server answers a response that never started
        try:
            if self._last_words is not None:
                body = self._last_words()
                await self._send(
                    send, {"type": "http.response.body", "body": body, "more_body": True}
                )
            await self._send(send, {"type": "http.response.body", "body": b"", "more_body": False})
        except SendTimeoutError:
            pass  # logged; the server closes the connection

    async def _stream(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await self._send(send, start)
        self._started = True
        chunks = self._chunks
        try:
            async for chunk in chunks:
                await self._send(
                    send, {"type": "http.response.body", "body": chunk, "more_body": True}
                )
        finally:
            await chunks.aclose()  # a failed send leaves the generator at a yield
        self._finished = True
        await self._send(send, {"type": "http.response.body", "body": b"", "more_body": False})

    async def _send(self, send: Send, message: Message) -> None:
        async with self._lock:
            try:
                async with asyncio.timeout(self._send_timeout_s):
                    await send(message)
            except TimeoutError:
                log.warning(
                    "a client stopped reading for %g s: its stream ends", self._send_timeout_s
                )
                raise SendTimeoutError from None
            self._last_sent = asyncio.get_running_loop().time()

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self._client_left()

    def _on_timer(self, send: Send) -> None:
        """The keep-alive timer: a comment if nothing went out for `keepalive_s`, then the
        timer again for when the stream will next have been silent that long."""
        if self._finished:
            return
        loop = asyncio.get_running_loop()
        now, due = loop.time(), self._last_sent + self._keepalive_s
        if now >= due:
            if not self._lock.locked():  # else a send is under way: not a silence of ours
                self._keepalive = loop.create_task(self._send_keepalive(send))
            due = now + self._keepalive_s
        self._timer = loop.call_at(due, self._on_timer, send)

    async def _send_keepalive(self, send: Send) -> None:
        try:
            await self._send(
                send, {"type": "http.response.body", "body": KEEPALIVE, "more_body": True}
            )
        except SendTimeoutError:
            self._client_left()  # stuck: end the stream as for a gone client
