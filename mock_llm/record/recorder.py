"""The recording proxy (`python -m mock_llm record`): pass everything through, keep each
model answer as a flow.

A client's request goes upstream as it came (hop-by-hop headers aside) and the answer
comes back read by read: the client cannot tell the recorder is there. Each answer of a
recorded API (mock_llm.record.recorded_apis) is read by its API's reader and, once ended,
written into the recording as a redacted flow step; anything else only passes through.

Deliberate choices:
- The file is rewritten whole after every exchange, through a temporary file and
  `os.replace`, so it is always complete and Ctrl-C loses nothing.
- Secrets never reach the file: no header or request body is written, and the
  Authorization and API-key values are redacted from everything (an upstream may echo one).
- `Accept-Encoding` is narrowed to what the recorder can decode; a body that does not
  decode to its end, or has a line over 8 MiB, is passed on but not recorded.
- A hostile upstream costs bounded memory and is passed on as it came, unrecorded (the log
  says why; docs/reliability.md): an answer is decoded only up to `max_recorded_bytes`
  (`MAX_RECORDED_BODY_BYTES`, a gzip bomb included, asked for or not), a stream read only
  up to `max_recorded_chunks` pieces (`MAX_RECORDED_CHUNKS`: an opener with no end over
  megabytes); what was read of such an answer is dropped at once, though its relay goes
  on. Only choice 0 of a stream is read (`recording.StreamParser`). A stream with bytes
  that are not UTF-8 is recorded with U+FFFD in their place, and its log line says so.
- An exchange the client left, or whose upstream could not be reached (a 502), is not
  recorded: it says nothing about the upstream.
- The upstream is reached through `servekit.httpx_pool.HttpxPool` (short idle time, one
  retry on a fresh connection), since httpx itself never retries a stale connection.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread
import httpx
import uvicorn
from starlette.types import Message, Receive, Scope, Send

from guardrail.json_shapes import as_object
from mock_llm.flows.flow_file import load_flow_file
from mock_llm.flows.flow_writer import dump_flows
from mock_llm.flows.model import CutFault, Step, describe_fault
from mock_llm.record.content_coding import READABLE_CODINGS, BodyDecoder
from mock_llm.record.recorded_apis import RecordedApi, recorded_api
from mock_llm.record.recorded_step import MAX_RECORDED_CHUNKS, LineReader, error_step, read_json
from mock_llm.record.recording import Recording, description, turn_of
from mock_llm.record.redaction import Redactor
from mock_llm.server.played import quiet_abort_logs
from servekit.allowed_hosts import HostPolicy
from servekit.error_bodies import openai_error_body
from servekit.hop_by_hop import end_to_end
from servekit.httpx_pool import HttpxPool
from servekit.in_thread import serve_in_thread
from servekit.json_codec import dumps
from servekit.limits import LOCAL_ONLY
from servekit.pool import POOL_IDLE_S, RequestFailed
from servekit.refusal import send_refusal
from servekit.request_body import BodyTooLarge, read_body

DEFAULT_PORT = 8097
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest request the recorder passes on: its own limit, above servekit's default, for
the requests a real upstream takes (long conversations, images as data URLs)."""
MAX_RECORDED_BODY_BYTES = 16 * 1024 * 1024
"""The most of an answer (as decoded) read to record it, a stream or whole; a longer one
passes through unrecorded."""
NOT_UTF8 = " (bytes that are not UTF-8 recorded as U+FFFD)"
"""The end of the log line of a stream that had such bytes."""
SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "x-goog-api-key"})
"""Headers whose values are redacted from whatever is recorded (no header is written)."""
COMMENT = (
    "Recorded by python -m mock_llm record; replay with python -m mock_llm --flows FILE.\n"
    "Each step's chunks are the stream as it arrived (docs/mock_llm.md, Record and replay)."
)


class UpstreamError(ValueError):
    """An `--upstream` that is not an http(s) base URL."""


@dataclass(frozen=True)
class Upstream:
    """The upstream's base URL, and how it may be shown (no userinfo, no query)."""

    url: str
    display: str

    @classmethod
    def parse(cls, text: str) -> Upstream:
        parts = urlsplit(text.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamError(
                f"expected an http(s) base URL such as http://127.0.0.1:8080/v1, not {text!r}"
            )
        path = parts.path.rstrip("/")
        host = parts.netloc.rpartition("@")[2]
        display = urlunsplit((parts.scheme, host, path, "", ""))
        return cls(urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")), display)

    def target(self, path: str, query: str) -> str:
        """Where a request for `path` goes: `/v1/X` and `/X` both to the base URL's `/X`;
        Ollama's `/api/X` to the server's root, the base URL without its `/v1`."""
        base = urlsplit(self.url)
        root = base.path
        if path == "/api" or path.startswith("/api/"):
            root = root.removesuffix("/v1")
        elif path == "/v1" or path.startswith("/v1/"):
            path = path[3:]
        queries = "&".join(q for q in (base.query, query) if q)
        return urlunsplit((base.scheme, base.netloc, root + path, queries, ""))


@dataclass(frozen=True)
class RecorderSettings:
    upstream: Upstream
    out: Path
    redactor: Redactor = field(default_factory=Redactor)
    max_body_bytes: int = MAX_BODY_BYTES
    connect_timeout_s: float = 30.0
    upstream_idle_s: float = POOL_IDLE_S
    """How long an idle connection to the upstream is kept for reuse."""
    log: Callable[[str], None] | None = None
    """Where a line per recorded exchange goes (the command line prints it)."""
    hosts: HostPolicy = LOCAL_ONLY
    """The Host names the recorder answers to (`--allowed-hosts`, servekit.allowed_hosts)."""
    max_recorded_bytes: int = MAX_RECORDED_BODY_BYTES
    """The most of an answer decoded to record it (made small by tests)."""
    max_recorded_chunks: int = MAX_RECORDED_CHUNKS
    """The most pieces of a stream read to record it (made small by tests)."""


def load_recording(path: Path) -> Recording:
    """The recording at `path` to continue, or a new one; FlowFileError for a bad file."""
    if not path.exists():
        return Recording()
    return Recording(flows=load_flow_file(path))


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all (gzip-compressed for a `.gz` name)."""
    data = text.encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def narrow_accept_encoding(value: str) -> str:
    """`Accept-Encoding` with only the codings the recorder can read (else `identity`)."""
    kept = [
        item.strip()
        for item in value.split(",")
        if item.split(";")[0].strip().lower() in READABLE_CODINGS
    ]
    return ", ".join(kept) or "identity"


def secret_values(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The secrets a request's headers carry: whole values, and a Bearer/Basic token."""
    secrets: list[str] = []
    for name, value in headers:
        if name.lower() in SECRET_HEADERS and value.strip():
            secrets.append(value.strip())
            scheme, _, token = value.strip().partition(" ")
            if token.strip() and scheme.lower() in ("bearer", "basic", "token"):
                secrets.append(token.strip())
    return secrets


@dataclass
class _Relayed:
    """What the recorder read of an answer while relaying it."""

    problem: str | None = None
    """Why there is nothing to record (the upstream could not be reached, or the answer is
    past a bound or unreadable: then nothing more of it is read)."""
    headers: httpx.Headers = field(default_factory=httpx.Headers)
    decoder: BodyDecoder = field(default_factory=lambda: BodyDecoder("", 0))
    reader: LineReader | None = None
    """The stream's reader (None: the answer is read whole, from `kept`)."""
    kept: bytearray = field(default_factory=bytearray)
    """The decoded body of an answer that is not a stream (an error status's too)."""

    def read(self, raw: bytes, at_ms: float) -> None:
        """Decode and read a copy of `raw`; on the first problem, drop what was read."""
        data = self.decoder(raw)
        reader = self.reader
        if reader is not None:
            reader.feed(data, at_ms)
        else:
            self.kept += data
        self.problem = self.decoder.problem or (reader.problem if reader is not None else None)
        if self.problem is not None:
            self.reader, self.kept = None, bytearray()


@dataclass
class _Exchange:
    """One request through the recorder, as the client and the upstream see it."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes
    started: float = 0.0
    status: int = 0
    response_headers: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    broken: bool = False
    client_gone: bool = False
    answered: bool = False
    """The whole response went to the client (a disconnect after that is not a departure)."""


class Recorder:
    """The recorder as an ASGI app."""

    def __init__(self, settings: RecorderSettings, recording: Recording | None = None) -> None:
        self.settings = settings
        self.recording = recording if recording is not None else load_recording(settings.out)
        self._pool: HttpxPool | None = None
        self._write_lock = anyio.Lock()
        self.saved = 0
        """Answers recorded and written so far."""
        self.skipped = 0
        """Answers that passed through but were not recorded (see `_unrecordable`)."""
        self._counted = threading.Condition()

    def wait_for(self, *, saved: int = 0, skipped: int = 0, timeout_s: float) -> bool:
        """Block until at least `saved` exchanges are written and `skipped` passed unrecorded
        (a client has its answer just before the file is written); False on timeout. From
        any thread but the recorder's own."""
        with self._counted:
            return self._counted.wait_for(
                lambda: self.saved >= saved and self.skipped >= skipped, timeout_s
            )

    def _count(self, *, saved: int = 0, skipped: int = 0) -> None:
        with self._counted:
            self.saved += saved
            self.skipped += skipped
            self._counted.notify_all()

    @property
    def pool(self) -> HttpxPool:
        if self._pool is None:
            timeout = httpx.Timeout(None, connect=self.settings.connect_timeout_s)
            self._pool = HttpxPool(
                timeout=timeout, idle_s=self.settings.upstream_idle_s, follow_redirects=False
            )
        return self._pool

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        host = next((value for name, value in headers if name == "host"), None)
        if host is not None and not self.settings.hosts.allows(host):
            await _answer_error(send, 421, self.settings.hosts.refusal(host))
            return
        try:
            body, early = await read_body(receive, self.settings.max_body_bytes, None)
        except BodyTooLarge:
            await _answer_error(send, 413, "The request body is too large for the recorder.")
            return
        if early is not None:  # the client left before its body was whole
            return
        exchange = _Exchange(scope["method"], scope["path"], headers, body)
        query = scope.get("query_string", b"").decode("latin-1")
        await self._proxy(exchange, query, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _proxy(self, exchange: _Exchange, query: str, receive: Receive, send: Send) -> None:
        """Forward the exchange, watching for the client going away all along (even while the
        upstream has not answered yet); then record it, when it is of an API recorded."""
        request = self.pool.client.build_request(
            exchange.method,
            self.settings.upstream.target(exchange.path, query),
            headers=_upstream_headers(exchange.headers),
            content=exchange.body,
        )
        api = recorded_api(exchange.method, exchange.path)
        relayed = _Relayed()
        when = datetime.now(UTC)
        async with anyio.create_task_group() as group:
            group.start_soon(_watch_disconnect, receive, group.cancel_scope, exchange)
            await self._forward(exchange, request, send, relayed, api)
            group.cancel_scope.cancel()
        if api is None:
            return
        # (a broken upstream body has returned without finishing ours: the client's breaks too)
        relayed.decoder.finish()
        problem = relayed.problem or _unrecordable(exchange, relayed)
        if problem is not None:
            self._count(skipped=1)
            self._log(f"mock_llm record: {exchange.path}: not recorded: {problem}")
            return
        step = self._step(exchange, relayed, api)
        not_utf8 = relayed.reader is not None and relayed.reader.not_utf8
        await self._record(exchange, step, when, api, NOT_UTF8 if not_utf8 else "")

    async def _forward(
        self,
        exchange: _Exchange,
        request: httpx.Request,
        send: Send,
        relayed: _Relayed,
        api: RecordedApi | None,
    ) -> None:
        """Send the request upstream and relay its answer read by read, reading a copy."""
        exchange.started = time.monotonic()
        try:
            response = await self.pool.send(request, stream=True)
        except RequestFailed as failed:
            relayed.problem = f"the upstream cannot be reached ({failed.cause})"
            await _answer_error(send, 502, f"mock_llm record: {relayed.problem}")
            return
        try:
            exchange.status = response.status_code
            relayed.headers = response.headers
            relayed.decoder = BodyDecoder(
                response.headers.get("content-encoding", ""), self.settings.max_recorded_bytes
            )
            content_type = response.headers.get("content-type", "").lower()
            if api is not None and content_type.startswith(api.stream_type):
                relayed.reader = api.reader() if response.status_code < 400 else None
                if relayed.reader is not None:
                    relayed.reader.max_chunks = self.settings.max_recorded_chunks
            start = {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": _response_headers(response.headers.raw),
            }
            if not await _relay(send, start, exchange):
                return
            length = response.headers.get("content-length", "")
            remaining = int(length) if length.isdigit() else None
            try:
                async for raw in response.aiter_raw():
                    at_ms = (time.monotonic() - exchange.started) * 1000
                    if remaining is not None:  # the client may close once it has it all
                        remaining -= len(raw)
                        exchange.answered = remaining <= 0
                    body = {"type": "http.response.body", "body": raw, "more_body": True}
                    if not await _relay(send, body, exchange):
                        return
                    if api is not None and relayed.problem is None:
                        relayed.read(raw, at_ms)
            except httpx.HTTPError:
                exchange.broken = True
                return
            exchange.answered = True
            await _relay(
                send, {"type": "http.response.body", "body": b"", "more_body": False}, exchange
            )
        finally:
            await response.aclose()

    def _log(self, line: str) -> None:
        if self.settings.log is not None:
            self.settings.log(line)

    def _step(self, exchange: _Exchange, relayed: _Relayed, api: RecordedApi) -> Step:
        if exchange.status >= 400:
            step = error_step(exchange.status, relayed.headers, bytes(relayed.kept))
        elif relayed.reader is not None:
            step = relayed.reader.step(exchange.broken)
        elif exchange.broken:
            step = Step(fault=CutFault(0, "abort"))
        else:
            step = api.whole(bytes(relayed.kept))
        return self.settings.redactor.with_secrets(secret_values(exchange.headers)).step(step)

    async def _record(
        self, exchange: _Exchange, step: Step, when: datetime, api: RecordedApi, note: str
    ) -> None:
        turn = turn_of(api.messages(exchange.body))
        model = (as_object(read_json(exchange.body)) or {}).get("model")
        redactor = self.settings.redactor.with_secrets(secret_values(exchange.headers))
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        text = redactor.text(description(self.settings.upstream.display, stamp, model))
        name = self.recording.add(turn, step, text)
        async with self._write_lock:
            document = dump_flows(self.recording.flows.values(), COMMENT)
            try:
                await anyio.to_thread.run_sync(write_atomically, self.settings.out, document)
            except OSError as exc:  # the answer went through; the next write may succeed
                self._log(f"mock_llm record: cannot write {self.settings.out}: {exc}")
                return
            self._count(saved=1)
        steps = len(self.recording.flows[name].steps)
        self._log(f"mock_llm record: {name} step {steps}: {_summary(step)}{note}")


def _unrecordable(exchange: _Exchange, relayed: _Relayed) -> str | None:
    """Why an exchange is not recorded, or None."""
    if exchange.client_gone:
        return "the client left before the answer ended"
    if relayed.decoder.problem is not None:
        return relayed.decoder.problem
    if not (200 <= exchange.status < 300 or 400 <= exchange.status <= 599):
        return f"the upstream answered {exchange.status}"
    if relayed.reader is not None:
        return relayed.reader.problem
    return None


async def _relay(send: Send, message: Message, exchange: _Exchange) -> bool:
    """Send `message` to the client; False when it has gone."""
    try:
        await send(message)
    except OSError:
        exchange.client_gone = not exchange.answered
        return False
    return True


def _summary(step: Step) -> str:
    parts = [f"{len(step.recorded)} chunks" if step.recorded else "whole"]
    if step.fault is not None:
        parts.append(describe_fault(step.fault))
    else:
        parts.append(step.resolved_finish_reason)
    return ", ".join(parts)


async def _watch_disconnect(
    receive: Receive, scope: anyio.CancelScope, exchange: _Exchange
) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            if not exchange.answered:
                exchange.client_gone = True
                scope.cancel()
            return


def _upstream_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The client's headers as they go upstream: hop-by-hop ones (and those `Connection`
    names) dropped, `Host` and `Content-Length` left to the client library,
    `Accept-Encoding` narrowed to what the recorder reads."""
    return [
        (name, narrow_accept_encoding(value) if name.lower() == "accept-encoding" else value)
        for name, value in end_to_end(headers, also=("host", "content-length"))
    ]


def _response_headers(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return end_to_end(raw)


async def _answer_error(send: Send, status: int, message: str) -> None:
    body = dumps(
        openai_error_body(message, "server_error" if status >= 500 else "invalid_request_error")
    )
    await send_refusal(send, status, body)


def recorder_config(recorder: Recorder, *, access_log: bool = False) -> uvicorn.Config:
    """uvicorn's config for the recorder: the upstream's own `server` and `date` headers
    pass through, so uvicorn adds none of its own."""
    quiet_abort_logs()
    return uvicorn.Config(
        recorder,
        access_log=access_log,
        log_level="warning",
        timeout_graceful_shutdown=2,
        lifespan="on",
        server_header=False,
        date_header=False,
    )


@contextmanager
def serve_recorder(settings: RecorderSettings) -> Generator[tuple[str, Recorder]]:
    """The recorder in a background thread on a free 127.0.0.1 port: its URL, and itself."""
    recorder = Recorder(settings)
    with serve_in_thread(recorder_config(recorder)) as url:
        yield url, recorder
