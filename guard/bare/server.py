"""The guard proxy on a bare install: asyncio and h11 in front of the in-process transport.

`serve(sock, settings)` answers HTTP/1.1 on a listening socket and hands every request to
`guard.transport.AsyncGuardTransport` wrapping httpx's own, pointed at the upstream: the
transport is the guard (the APIs it guards, the one recovery, the error shapes, the log
line, all of `guard.relay`'s flow) and passes anything else through, so this module only
moves bytes between a client connection and it. It needs nothing a bare
`pip install scaffold-guard` does not bring (h11 comes with httpx); `python -m guard` serves
with it when the `proxy` extra (uvicorn, Starlette, aiohttp) is not installed, or when told
(`--server asyncio`).

Deliberate choices:
- Every bound of the full proxy's head and body (servekit.request_head: 431, 414, 400, 421,
  413; a body not whole within BODY_TIMEOUT_S is a 408), refused in the OpenAI error shape
  with the connection closed after.
- One request at a time on a connection: the next is read once the answer is sent (h11's
  cycle). A client's idle connection is kept CLIENT_KEEPALIVE_S, as the full proxy does.
- The answer's own framing is not kept: its body goes out chunked (Content-Length only on a
  HEAD), since the guard's body is not the upstream's.
- A client that leaves (its connection read to its end) closes the answer at once, and with
  it the upstream request, as the full proxy does.
- After `keepalive_s` of upstream silence an SSE answer gets a `: keep-alive` comment, only
  between events (every SSE API, the Messages API's too, where the full proxy sends
  Anthropic's `ping` event; a comment is read past by every SSE client); other answers get
  nothing.
- A passed-on answer cut by the upstream is cut here too (no last chunk), so the client
  sees a short body as an error; the guarded APIs end a cut stream in their own error shape
  (the transport's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from http import HTTPStatus

import h11
import httpx

from guard.settings import MAX_BODY_BYTES, GuardSettings
from guard.transport import AsyncGuardTransport
from guard.wire.openai_errors import error_json
from servekit.hop_by_hop import end_to_end
from servekit.keep_alive import CLIENT_KEEPALIVE_S
from servekit.request_head import (
    DEFAULT_MAX_HEADER_BYTES,
    HeadLimits,
    HeadRefused,
    body_too_large,
    check_head,
)

__all__ = ["BODY_TIMEOUT_S", "serve", "serve_forever"]

log = logging.getLogger("guard")

BODY_TIMEOUT_S = 10.0
"""How long a request's body may take to arrive whole (then a 408)."""
GRACE_S = 5.0
"""How long answers under way may go on after the server is told to stop."""
READ_BYTES = 64 * 1024
KEEPALIVE = b": keep-alive\n\n"
NOT_HTTP = "The request is not valid HTTP/1.1."
HEAD_TOO_LARGE = f"The request headers are over {DEFAULT_MAX_HEADER_BYTES} bytes."
EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")
REQUEST_DROPS = ("host", "content-length")
"""The client's headers not sent upstream besides the hop-by-hop ones: httpx writes its own."""
ANSWER_DROPS = ("content-length", "date", "server")
"""The upstream's headers not sent back besides the hop-by-hop ones (the body is framed here)."""


class _Gone(Exception):
    """The client closed its connection."""


@dataclass(frozen=True)
class _Request:
    method: bytes
    target: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


class _Client:
    """One client connection: h11's state and the socket's two ends."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=DEFAULT_MAX_HEADER_BYTES)

    async def event(self) -> object:
        """h11's next event (an h11.Event, or h11.PAUSED), reading what it needs."""
        while (event := self.h11.next_event()) is h11.NEED_DATA:
            self.h11.receive_data(await self.reader.read(READ_BYTES))
        return event

    async def send(self, *events: h11.Event) -> None:
        for event in events:
            data = self.h11.send(event)
            if data:
                self.writer.write(data)
        try:
            await self.writer.drain()
        except OSError as exc:
            raise _Gone from exc

    async def refuse(self, status: int, message: str) -> None:
        """Answer `status` in the OpenAI error shape and end the connection."""
        if self.h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        body = error_json(status, message)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        with contextlib.suppress(_Gone, h11.LocalProtocolError):
            await self.send(
                h11.Response(status_code=status, headers=headers, reason=_reason(status)),
                h11.Data(data=body),
                h11.EndOfMessage(),
            )


class _Proxy:
    def __init__(self, settings: GuardSettings) -> None:
        self.root = settings.upstream.rstrip("/")
        self.settings = settings
        self.limits = HeadLimits(max_body_bytes=MAX_BODY_BYTES, hosts=settings.hosts)
        pool = httpx.Limits(max_connections=None, keepalive_expiry=settings.pool_idle_s)
        self.transport = AsyncGuardTransport(
            httpx.AsyncHTTPTransport(limits=pool),
            profiles=settings.profiles,
            max_answer_bytes=settings.max_answer_bytes,
        )
        self.timeouts = {
            "connect": settings.connect_timeout_s,
            "read": None,
            "write": None,
            "pool": None,
        }

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = _Client(reader, writer)
        try:
            while await self._one(client):
                client.h11.start_next_cycle()
        except (_Gone, OSError, TimeoutError):
            pass
        except h11.RemoteProtocolError as exc:
            status = exc.error_status_hint
            await client.refuse(status, HEAD_TOO_LARGE if status == 431 else NOT_HTTP)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _one(self, client: _Client) -> bool:
        """One request and its answer; whether the connection goes on."""
        async with asyncio.timeout(CLIENT_KEEPALIVE_S):
            event = await client.event()
        if not isinstance(event, h11.Request):
            return False  # the client closed its idle connection
        headers = [(name.lower(), value) for name, value in event.headers.raw_items()]
        try:
            version = event.http_version.decode("ascii")
            check_head(self.limits, version, event.target, headers)
            if not event.target.startswith(b"/"):
                raise HeadRefused(400, "The request target is not a path.")
            if client.h11.client_is_waiting_for_100_continue:
                await client.send(
                    h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")
                )
            async with asyncio.timeout(BODY_TIMEOUT_S):
                body = await self._body(client)
        except HeadRefused as refused:
            await client.refuse(refused.status, refused.message)
            return False
        except TimeoutError:
            await client.refuse(
                408, f"The request body did not arrive within {BODY_TIMEOUT_S:g} s."
            )
            return False
        await self._answer(client, _Request(event.method, event.target, headers, body))
        return client.h11.our_state is h11.DONE and client.h11.their_state is h11.DONE

    async def _body(self, client: _Client) -> bytes:
        parts: list[bytes] = []
        size = 0
        while not isinstance(event := await client.event(), h11.EndOfMessage):
            if not isinstance(event, h11.Data):
                raise _Gone
            size += len(event.data)
            if size > MAX_BODY_BYTES:
                raise HeadRefused(413, body_too_large(MAX_BODY_BYTES))
            parts.append(bytes(event.data))
        return b"".join(parts)

    async def _answer(self, client: _Client, request: _Request) -> None:
        upstream = httpx.Request(
            request.method.decode("ascii"),
            self.root + request.target.decode("ascii"),
            headers=end_to_end(request.headers, also=REQUEST_DROPS),
            content=request.body,
            extensions={"timeout": self.timeouts},
        )
        try:
            response = await self.transport.handle_async_request(upstream)
        except (httpx.HTTPError, OSError) as exc:
            log.warning(
                "guard: upstream %s failed: error=%s", request.method.decode(), type(exc).__name__
            )
            await client.refuse(502, "The model server could not be reached.")
            return
        try:
            await self._relay(client, request, response)
        finally:
            await response.aclose()

    async def _relay(self, client: _Client, request: _Request, response: httpx.Response) -> None:
        drops = ANSWER_DROPS if request.method != b"HEAD" else ANSWER_DROPS[1:]
        headers = end_to_end(response.headers.raw, also=drops)
        status = response.status_code
        await client.send(h11.Response(status_code=status, headers=headers, reason=_reason(status)))
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        gone = asyncio.ensure_future(_watch(client))
        try:
            async for data in _pieces(response, gone, self.settings.keepalive_s if sse else None):
                await client.send(h11.Data(data=data))
        except (httpx.HTTPError, OSError):
            return  # cut upstream: the client's body stays short (no last chunk)
        finally:
            gone.cancel()  # and waited for: the next request's read must be the only one
            with contextlib.suppress(asyncio.CancelledError):
                await gone
        await client.send(h11.EndOfMessage())


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


async def _watch(client: _Client) -> None:
    """Returns when the client closes its connection; what it sends meanwhile (its next
    request) is kept for h11."""
    while data := await client.reader.read(READ_BYTES):
        client.h11.receive_data(data)


async def _pieces(
    response: httpx.Response, gone: asyncio.Future[None], keepalive_s: float | None
) -> AsyncIterator[bytes]:
    """The answer's bytes as they come, a keep-alive comment between events after each
    `keepalive_s` of silence (None: none); _Gone once the client has left."""
    stream = response.stream
    assert isinstance(stream, httpx.AsyncByteStream)
    pieces = aiter(stream)
    between_events = True
    while True:
        piece = asyncio.ensure_future(anext(pieces, None))
        try:
            while True:
                done, _ = await asyncio.wait(
                    {piece, gone}, timeout=keepalive_s, return_when=asyncio.FIRST_COMPLETED
                )
                if gone in done:
                    raise _Gone
                if piece in done:
                    break
                if between_events:
                    yield KEEPALIVE
        finally:
            if not piece.done():
                piece.cancel()
        data = piece.result()
        if data is None:
            return
        if not data:
            continue
        between_events = data.endswith(EVENT_ENDS)
        yield data


async def serve(
    sock: socket.socket, settings: GuardSettings, stop: asyncio.Event | None = None
) -> None:
    """Serve the guard on `sock` until `stop` is set (None: until SIGTERM or SIGINT), then
    let answers under way end (at most GRACE_S)."""
    proxy = _Proxy(settings)
    tasks: set[asyncio.Task[None]] = set()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await proxy.connection(reader, writer)
        finally:
            tasks.discard(task)

    if stop is None:
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    server = await asyncio.start_server(accepted, sock=sock, limit=READ_BYTES)
    try:
        await stop.wait()
    finally:
        server.close()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=GRACE_S)
            for task in pending:
                task.cancel()
        await proxy.transport.aclose()


def serve_forever(sock: socket.socket, settings: GuardSettings) -> None:
    asyncio.run(serve(sock, settings))
