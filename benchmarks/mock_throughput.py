"""Streaming throughput of `mock_llm` against `mockllm` (PyPI) and `aimock` (npm), one run.

Concurrent one-character-chunk streams from each server as a subprocess, read by three
clients, for chat completions and each extra wire format. Targets and runs:
docs/benchmarks.md, "mock_llm throughput".

Deliberate choices a reader might want to "fix":
- The baselines get their best case (mockllm tuned on our uvicorn stack, aimock warmed
  up), and neither is ever a dependency (isolated `uv tool run`; npm into a cache).
- A client that used 90% of a core while our server had CPU to spare measured itself: its
  ratio says NO VERDICT, not PASS or FAIL.

Reproduce: `uv run python benchmarks/mock_throughput.py` (every target; `--help`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import itertools
import json
import os
import platform
import shlex
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar, cast

import httptools
import httpx
import yaml
from measure import group_cpu_seconds, percentile
from servers import RunningServer, ServerSpec, mock_llm_spec, serving
from verdicts import FAIL, PASS, exit_status, verdict

FLOW_NAME = "bench"
TRIGGER = f"[[mock:{FLOW_NAME}]]"
MODEL = "gpt-4o-mini"
ALPHABET = string.ascii_letters + string.digits
MOCKLLM_VERSION = "0.0.8"
AIMOCK_PACKAGE = "@copilotkit/aimock"
AIMOCK_VERSION = "1.43.0"
TARGET_STREAMS = 500
CLIENT_BOUND_CPU = 0.9  # a client at this share of a core is the bottleneck
OURS = "mock_llm"
MOCKLLM = "mockllm"
AIMOCK = "aimock"
BASELINES = (MOCKLLM, AIMOCK)
SERVERS = (OURS, *BASELINES)
STREAM_TIMEOUT_S = 300.0
JSON_DECODER = json.JSONDecoder()
T = TypeVar("T")

MockllmMode = Literal["tuned", "stock"]
ClientKind = Literal["light", "raw", "httpx"]
CLIENTS: tuple[ClientKind, ...] = ("light", "raw", "httpx")


class Target(NamedTuple):
    """Ours must reach `ratio` times `baseline`'s chunks/s at `streams` concurrent streams,
    judged with each of `clients` that was measured (chat completions)."""

    baseline: str
    streams: int
    ratio: float
    clients: tuple[ClientKind, ...]


TARGETS = (
    Target(MOCKLLM, TARGET_STREAMS, 2.0, CLIENTS),
    Target(AIMOCK, 200, 2.0, ("light",)),
)


# ---------------------------------------------------------------------------------------
# Data


class Level(NamedTuple):
    """One measurement: how many concurrent streams, of how many chunks, which repetition,
    in which wire format."""

    streams: int
    chunks: int
    run: int
    format: str = "openai"


@dataclass
class StreamResult:
    """What one streamed completion delivered, as the client saw it."""

    chunks: int = 0
    text: str = ""
    error: str | None = None
    arrivals: list[float] = field(default_factory=list[float])


@dataclass(frozen=True)
class LevelResult:
    """One server at one concurrency level, one repetition."""

    server: str
    client: ClientKind
    format: str
    streams: int
    chunks: int
    run: int
    ok: int
    errors: int
    lost: int
    wall_s: float
    received: int
    p50_ms: float
    p99_ms: float
    server_cpu: float
    client_cpu: float
    error_samples: tuple[str, ...]

    @property
    def chunks_per_s(self) -> float:
        return self.received / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def server_us_per_chunk(self) -> float:
        """Server CPU time per content chunk received, in microseconds: what a chunk costs
        the server whatever else the machine was doing."""
        return self.server_cpu * self.wall_s / self.received * 1e6 if self.received else 0.0

    @property
    def clean(self) -> bool:
        return self.errors == 0 and self.lost == 0 and self.ok == self.streams


# ---------------------------------------------------------------------------------------
# Fixtures: the answer text and each server's configuration


def expected_text(length: int) -> str:
    """The answer every server streams: letters and digits only, so no quoting issues."""
    repeats = length // len(ALPHABET) + 1
    return (ALPHABET * repeats)[:length]


def write_ours_flows(directory: Path, text: str) -> Path:
    """A mock_llm flow file with one flow whose only step streams `text` per character."""
    path = directory / "bench_flows.yaml"
    flows = {
        "flows": {
            FLOW_NAME: {
                "description": "benchmark stream: one character per chunk",
                "steps": [{"content": text, "chunking": "char"}],
            }
        }
    }
    path.write_text(yaml.safe_dump(flows, sort_keys=False), encoding="utf-8")
    return path


def write_mockllm_responses(directory: Path, text: str, mode: MockllmMode) -> Path:
    """A mockllm responses file: trigger -> text, and text -> text (its double lookup)."""
    path = directory / "mockllm_responses.yaml"
    data = {
        "responses": {TRIGGER: text, text: text},
        "settings": {"lag_enabled": False, "lag_factor": 10},
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    if mode == "tuned":
        whole_second = float(int(time.time()) - 1)
        os.utime(path, (whole_second, whole_second))
    return path


def write_aimock_fixture(directory: Path, text: str) -> Path:
    """An aimock fixture file: a user message holding the trigger answers `text`."""
    path = directory / "aimock_fixtures.json"
    fixture = {"match": {"userMessage": TRIGGER}, "response": {"content": text}, "chunkSize": 1}
    path.write_text(json.dumps({"fixtures": [fixture]}), encoding="utf-8")
    return path


def uv_executable() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        raise RuntimeError("the mockllm baseline needs `uv` on PATH (or --baselines aimock)")
    return found


def mockllm_spec(responses: Path, port: int, mode: MockllmMode) -> ServerSpec:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["MOCKLLM_RESPONSES_FILE"] = str(responses)
    argv = [uv_executable(), "tool", "run", "--quiet", "--from", f"mockllm=={MOCKLLM_VERSION}"]
    if mode == "stock":
        argv += ["mockllm", "start", "--responses", str(responses)]
        argv += ["--host", "127.0.0.1", "--port", str(port)]
    else:
        uvicorn_version = importlib.metadata.version("uvicorn")
        argv += ["--with", f"uvicorn[standard]=={uvicorn_version}"]
        argv += ["python", "-m", "uvicorn", "mockllm.server:app"]
        argv += ["--host", "127.0.0.1", "--port", str(port)]
        argv += ["--no-access-log", "--log-level", "warning"]
    return ServerSpec(MOCKLLM, argv, env, responses.parent, "/models")


def aimock_home() -> Path:
    """The folder aimock is installed into: a cache outside the repository, per version."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "scaffold-guard-bench" / f"aimock-{AIMOCK_VERSION}"


def installed_aimock_version(home: Path) -> str | None:
    manifest = home / "node_modules" / AIMOCK_PACKAGE / "package.json"
    with contextlib.suppress(OSError, ValueError):
        return str(json.loads(manifest.read_text(encoding="utf-8")).get("version"))
    return None


def ensure_aimock() -> Path:
    """aimock's CLI script, installed with npm into `aimock_home()` on first use (pinned,
    no install scripts); never a dependency of this project."""
    home = aimock_home()
    cli = home / "node_modules" / AIMOCK_PACKAGE / "dist" / "cli.js"
    if installed_aimock_version(home) == AIMOCK_VERSION and cli.is_file():
        return cli
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise RuntimeError(
            "the aimock baseline needs node and npm on PATH (or --baselines mockllm)"
        )
    home.mkdir(parents=True, exist_ok=True)
    manifest = {"name": "aimock-bench", "private": True, "description": "benchmark baseline"}
    (home / "package.json").write_text(json.dumps(manifest), encoding="utf-8")
    log(f"installing {AIMOCK_PACKAGE}@{AIMOCK_VERSION} into {home}")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact",
         f"{AIMOCK_PACKAGE}@{AIMOCK_VERSION}"],
        cwd=home, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    found = installed_aimock_version(home)
    if found != AIMOCK_VERSION or not cli.is_file():
        raise RuntimeError(f"npm installed {AIMOCK_PACKAGE} {found}, not {AIMOCK_VERSION}")
    return cli


def aimock_spec(cli: Path, fixture: Path, port: int) -> ServerSpec:
    node = shutil.which("node") or "node"
    argv = [node, str(cli), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--fixtures", str(fixture), "--chunk-size", "1", "--latency", "0"]
    argv += ["--log-level", "silent"]
    return ServerSpec(AIMOCK, argv, dict(os.environ), fixture.parent, "/health")


def node_version() -> str:
    node = shutil.which("node")
    if node is None:
        return "none"
    done = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


# ---------------------------------------------------------------------------------------
# Stream readers: one per wire format, fed the de-chunked body as it arrived


class StreamReader:
    """Counts the content chunks of one stream, joins them, and notes its end marker.

    `feed` gets the response body as it arrives (already de-chunked), with the time of the
    socket read that delivered it. Subclasses split the body into messages and hand each
    parsed one to `handle`; non-empty content strings count as content chunks.
    """

    end_marker = "the end marker"

    def __init__(self) -> None:
        self.result = StreamResult()
        self.parts: list[str] = []
        self.pending = b""
        self.done = False

    def feed(self, data: bytes, now: float) -> None:
        raise NotImplementedError

    def handle(self, message: dict[str, Any], now: float) -> None:
        raise NotImplementedError

    def handle_batch(self, payloads: list[bytes], now: float) -> None:
        """One json parse for all the messages of a read, not one per chunk."""
        if payloads:
            batch = "[" + b",".join(payloads).decode() + "]"
            for message in JSON_DECODER.decode(batch):
                self.handle(message, now)

    def content(self, piece: object, now: float) -> None:
        if isinstance(piece, str) and piece:
            self.result.chunks += 1
            self.result.arrivals.append(now)
            self.parts.append(piece)

    def fail(self, error: str) -> None:
        self.result.error = self.result.error or error

    def finish(self) -> StreamResult:
        self.result.text = "".join(self.parts)
        if not self.done:
            self.fail(f"stream ended without {self.end_marker}")
        return self.result


class SseReader(StreamReader):
    """OpenAI chat completions: `data:` lines of chunk JSON, then `data: [DONE]`."""

    end_marker = "[DONE]"

    def feed(self, data: bytes, now: float) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        if self.done:
            return
        payloads = [line[5:].strip() for line in lines if line.startswith(b"data:")]
        if b"[DONE]" in payloads:
            self.done = True
            payloads = payloads[: payloads.index(b"[DONE]")]
        self.handle_batch(payloads, now)

    def handle(self, message: dict[str, Any], now: float) -> None:
        if message.get("error"):
            self.fail(f"error payload: {str(message['error'])[:120]}")
            return
        for choice in message.get("choices") or []:
            self.content((choice.get("delta") or {}).get("content"), now)


class NdjsonReader(StreamReader):
    """Ollama's /api/chat: one JSON object per line, the last one with `"done": true`."""

    end_marker = '"done": true'

    def feed(self, data: bytes, now: float) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        if not self.done:
            self.handle_batch([line for line in lines if line.strip()], now)

    def handle(self, message: dict[str, Any], now: float) -> None:
        if self.done:
            self.fail("a line after the done line")
        elif message.get("error"):
            self.fail(f"error line: {str(message['error'])[:120]}")
        elif message.get("done") is True:
            self.done = True
        else:
            self.content((message.get("message") or {}).get("content"), now)


class DataLineReader(StreamReader):
    """A stream read by its `data:` lines (other lines, CRs and blank lines skipped), each a
    message, with no `[DONE]`."""

    def feed(self, data: bytes, now: float) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        if not self.done:
            self.handle_batch(
                [line[5:].strip() for line in lines if line.startswith(b"data:")], now
            )


class ResponsesReader(DataLineReader):
    """The Responses API: SSE events (`event:` then `data:`), text in the `delta` of
    `response.output_text.delta` events, ended by `response.completed`."""

    end_marker = "response.completed"

    def handle(self, message: dict[str, Any], now: float) -> None:
        kind = message.get("type")
        if self.done:
            return
        if kind in ("error", "response.failed") or message.get("error"):
            self.fail(f"error event: {str(message)[:120]}")
        elif kind == "response.output_text.delta":
            self.content(message.get("delta"), now)
        elif kind == "response.completed":
            self.done = True


class MessagesReader(ResponsesReader):
    """Anthropic's Messages API: SSE events (`event:` then `data:`), text in the `delta` of
    `content_block_delta` events whose delta is a `text_delta`, ended by `message_stop`."""

    end_marker = "message_stop"

    def handle(self, message: dict[str, Any], now: float) -> None:
        kind = message.get("type")
        if self.done:
            return
        if kind == "error":
            self.fail(f"error event: {str(message)[:120]}")
        elif kind == "content_block_delta":
            delta = message.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.content(delta.get("text"), now)
        elif kind == "message_stop":
            self.done = True


class GeminiReader(DataLineReader):
    """Gemini's streamGenerateContent with `alt=sse`: `data:` lines of GenerateContentResponse
    JSON (CRLF line ends), text in the candidate's parts, ended by the chunk that carries
    `finishReason` (there is no end marker)."""

    end_marker = "finishReason"

    def handle(self, message: dict[str, Any], now: float) -> None:
        if self.done:
            self.fail("a chunk after the finish")
        elif message.get("error"):
            self.fail(f"error chunk: {str(message['error'])[:120]}")
            return
        for candidate in message.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if not part.get("thought"):
                    self.content(part.get("text"), now)
            if candidate.get("finishReason"):
                self.done = True


@dataclass(frozen=True)
class WireFormat:
    """A streaming API: where to send, what, and how to read the answer."""

    name: str
    path: str
    body: dict[str, Any]
    reader: Callable[[], StreamReader]

    def request_body(self) -> bytes:
        return json.dumps(self.body).encode()


USER_MESSAGES = [{"role": "user", "content": TRIGGER}]
GEMINI_CONTENTS = [{"role": "user", "parts": [{"text": TRIGGER}]}]
FORMATS: dict[str, WireFormat] = {
    "openai": WireFormat(
        "openai",
        "/v1/chat/completions",
        {"model": MODEL, "stream": True, "messages": USER_MESSAGES},
        SseReader,
    ),
    "ollama": WireFormat(
        "ollama", "/api/chat", {"model": MODEL, "stream": True, "messages": USER_MESSAGES},
        NdjsonReader,
    ),
    "responses": WireFormat(
        "responses", "/v1/responses", {"model": MODEL, "stream": True, "input": USER_MESSAGES},
        ResponsesReader,
    ),
    "anthropic": WireFormat(
        "anthropic", "/v1/messages",
        {"model": MODEL, "max_tokens": 4096, "stream": True, "messages": USER_MESSAGES},
        MessagesReader,
    ),
    "gemini": WireFormat(
        "gemini", f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
        {"contents": GEMINI_CONTENTS}, GeminiReader,
    ),
}  # fmt: skip
"""Every format a level can run in; adding one is one entry (and its reader)."""

SPEAKS: dict[str, frozenset[str]] = {
    OURS: frozenset(FORMATS),
    MOCKLLM: frozenset({"openai"}),
    AIMOCK: frozenset({"openai", "ollama", "responses", "anthropic", "gemini"}),
}
"""Which formats each server answers (its streams are then checked like ours)."""


# ---------------------------------------------------------------------------------------
# Clients


# httpx client: what an application (or the OpenAI SDK) would use.


async def httpx_stream(client: httpx.AsyncClient, url: str, fmt: WireFormat) -> StreamResult:
    """Run one streaming completion through httpx and record what arrived and when."""
    reader = fmt.reader()
    headers = {"content-type": "application/json"}
    body = fmt.request_body()
    try:
        async with client.stream("POST", url, content=body, headers=headers) as resp:
            if resp.status_code != 200:
                await resp.aread()
                reader.fail(f"HTTP {resp.status_code}")
                return reader.result
            async for data in resp.aiter_raw():
                reader.feed(data, time.perf_counter())
    except Exception as exc:  # every failure is a counted error, never a crash
        reader.fail(f"{type(exc).__name__}: {exc}"[:160])
    return reader.finish()


async def httpx_level(base_url: str, streams: int, fmt: WireFormat) -> list[StreamResult]:
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    timeout = httpx.Timeout(STREAM_TIMEOUT_S, connect=60.0, pool=STREAM_TIMEOUT_S)
    url = base_url + fmt.path
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        return await asyncio.gather(*(httpx_stream(client, url, fmt) for _ in range(streams)))


# Raw and light clients: one connection per stream (`Connection: close`, so the stream
# ends when the server closes it), no per-chunk awaits. The raw client parses as bytes
# arrive; the light client keeps the reads and parses them after the clock stops.


def raw_request(host: str, port: int, fmt: WireFormat) -> bytes:
    body = fmt.request_body()
    head = (
        f"POST {fmt.path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nAccept: */*\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class ResponseParser:
    """httptools' C HTTP/1.1 response parser feeding a stream reader, one read at a time."""

    def __init__(self, reader: StreamReader) -> None:
        self.reader = reader
        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.complete = False

    def feed(self, data: bytes, now: float) -> None:
        """Parse one socket read; its body bytes go to the reader in one piece. A protocol
        or JSON error is raised (the caller counts it as the stream's error)."""
        self.parser.feed_data(data)
        if self.body:
            self.reader.feed(b"".join(self.body), now)
            self.body.clear()

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status != 200:
            self.reader.fail(f"HTTP {status}")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True

    def fail(self, exc: Exception) -> None:
        self.reader.fail(f"{type(exc).__name__}: {exc}"[:160])

    def finish(self, exc: Exception | None) -> StreamResult:
        if not self.complete:
            self.reader.fail(f"connection closed mid-response ({exc or 'EOF'})")
        return self.reader.finish()


class RawProtocol(asyncio.Protocol):
    """One streaming completion on its own connection, parsed as it arrives; `finished`
    resolves at close."""

    def __init__(
        self, request: bytes, reader: StreamReader, finished: asyncio.Future[StreamResult]
    ) -> None:
        self.request = request
        self.finished = finished
        self.response = ResponseParser(reader)
        self.transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)  # uvloop's is no subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        try:
            self.response.feed(data, time.perf_counter())
        except Exception as exc:  # a protocol or JSON error is a counted stream error
            self.response.fail(exc)
            self.close()
        if self.response.complete:
            self.close()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished.done():
            self.finished.set_result(self.response.finish(exc))


@dataclass
class Capture:
    """What the light client kept of one stream: each read with its arrival time."""

    reads: list[tuple[float, bytes]] = field(default_factory=list[tuple[float, bytes]])
    error: Exception | None = None


LAST_CHUNK = b"0\r\n\r\n"


class LightProtocol(asyncio.Protocol):
    """One streaming completion on its own connection; while the clock runs it only keeps
    each read and its time. `finished` resolves when the connection closes: the server's
    doing, or ours once a read ends with the last chunk of a chunked body (some servers keep
    the connection open despite `Connection: close`). A read that only looked like the end
    leaves the body incomplete, which the parse after the clock counts as an error."""

    def __init__(self, request: bytes, finished: asyncio.Future[Capture]) -> None:
        self.request = request
        self.finished = finished
        self.capture = Capture()
        self.reads = self.capture.reads
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        cast(asyncio.WriteTransport, transport).write(self.request)

    def data_received(self, data: bytes) -> None:
        self.reads.append((time.perf_counter(), data))
        if data.endswith(LAST_CHUNK) and self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.capture.error = exc
        if not self.finished.done():
            self.finished.set_result(self.capture)


def parse_capture(capture: Capture, fmt: WireFormat) -> StreamResult:
    """After the clock: the light client's reads, parsed as the raw client parses them."""
    response = ResponseParser(fmt.reader())
    for now, data in capture.reads:
        try:
            response.feed(data, now)
        except Exception as exc:  # a protocol or JSON error is a counted stream error
            response.fail(exc)
            break
    return response.finish(capture.error)


async def connected(
    host: str, port: int, protocol: Callable[[asyncio.Future[T]], asyncio.Protocol]
) -> T | StreamResult:
    """Open one connection with `protocol` and wait for what it resolves at its end."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[T] = loop.create_future()
    try:
        await loop.create_connection(lambda: protocol(finished), host, port)
    except OSError as exc:  # a refused or reset connect is a counted stream error
        return StreamResult(error=f"{type(exc).__name__}: {exc}"[:160])
    try:
        return await asyncio.wait_for(asyncio.shield(finished), timeout=STREAM_TIMEOUT_S)
    except TimeoutError:
        return StreamResult(error=f"no end of stream within {STREAM_TIMEOUT_S:.0f}s")


async def raw_stream(host: str, port: int, fmt: WireFormat) -> StreamResult:
    request = raw_request(host, port, fmt)

    def protocol(done: asyncio.Future[StreamResult]) -> asyncio.Protocol:
        return RawProtocol(request, fmt.reader(), done)

    return await connected(host, port, protocol)


async def raw_level(host: str, port: int, streams: int, fmt: WireFormat) -> list[StreamResult]:
    return await asyncio.gather(*(raw_stream(host, port, fmt) for _ in range(streams)))


async def light_level(
    host: str, port: int, streams: int, fmt: WireFormat
) -> list[Capture | StreamResult]:
    request = raw_request(host, port, fmt)

    def protocol(done: asyncio.Future[Capture]) -> asyncio.Protocol:
        return LightProtocol(request, done)

    return await asyncio.gather(*(connected(host, port, protocol) for _ in range(streams)))


def gaps_ms(results: Sequence[StreamResult]) -> list[float]:
    """All inter-chunk gaps within each stream, in milliseconds, ascending."""
    gaps: list[float] = []
    for result in results:
        gaps.extend((b - a) * 1000 for a, b in itertools.pairwise(result.arrivals))
    gaps.sort()
    return gaps


async def measure_level(
    server: RunningServer, client: ClientKind, level: Level, text: str
) -> LevelResult:
    """N concurrent streams against one server; the clock covers first send to last end
    (the light client's parse and checks come after it)."""
    streams, fmt = level.streams, FORMATS[level.format]
    cpu_server0 = group_cpu_seconds(server.proc.pid)
    cpu_client0 = time.process_time()
    start = time.perf_counter()
    if client == "light":
        captured = await light_level("127.0.0.1", server.port, streams, fmt)
    elif client == "raw":
        captured = await raw_level("127.0.0.1", server.port, streams, fmt)
    else:
        captured = await httpx_level(server.base_url, streams, fmt)
    wall = time.perf_counter() - start
    cpu_client = time.process_time() - cpu_client0
    cpu_server = group_cpu_seconds(server.proc.pid) - cpu_server0
    results = [c if isinstance(c, StreamResult) else parse_capture(c, fmt) for c in captured]
    return summarize(
        (server.spec.name, client), level, text, results, wall, (cpu_server, cpu_client)
    )


def summarize(
    who: tuple[str, ClientKind],
    level: Level,
    text: str,
    results: Sequence[StreamResult],
    wall: float,
    cpu: tuple[float, float],
) -> LevelResult:
    """Fold the streams of one measurement into a table row."""
    streams, chunks, run, fmt = level
    errors = [r.error for r in results if r.error]
    ok = sum(1 for r in results if not r.error and r.chunks == chunks and r.text == text)
    lost = sum(max(0, chunks - r.chunks) for r in results)
    gaps = gaps_ms(results)
    return LevelResult(
        server=who[0],
        client=who[1],
        format=fmt,
        streams=streams,
        chunks=chunks,
        run=run,
        ok=ok,
        errors=len(errors),
        lost=lost,
        wall_s=wall,
        received=sum(r.chunks for r in results),
        p50_ms=percentile(gaps, 50),
        p99_ms=percentile(gaps, 99),
        server_cpu=cpu[0] / wall if wall > 0 else 0.0,
        client_cpu=cpu[1] / wall if wall > 0 else 0.0,
        error_samples=tuple(sorted(set(errors)))[:3],
    )


# ---------------------------------------------------------------------------------------
# Report


def runs_of(
    results: Sequence[LevelResult],
    name: str,
    client: ClientKind,
    streams: int,
    fmt: str = "openai",
) -> list[LevelResult]:
    return [
        r
        for r in results
        if r.server == name and r.client == client and r.streams == streams and r.format == fmt
    ]


def median_rate(
    results: Sequence[LevelResult],
    name: str,
    client: ClientKind,
    streams: int,
    fmt: str = "openai",
) -> float | None:
    rates = [r.chunks_per_s for r in runs_of(results, name, client, streams, fmt)]
    return statistics.median(rates) if rates else None


def median_share(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.0%}" if values else "n/a"


def results_table(results: Sequence[LevelResult]) -> list[str]:
    lines = [
        "| server | client | format | concurrency | chunks/stream | run | streams ok | errors"
        " | lost chunks | chunks/s | p50 gap ms | p99 gap ms | server CPU | client CPU"
        " | server CPU µs/chunk |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.server} | {r.client} | {r.format} | {r.streams} | {r.chunks} | {r.run}"
            f" | {r.ok}/{r.streams} | {r.errors} | {r.lost} | {r.chunks_per_s:,.0f}"
            f" | {r.p50_ms:.3f} | {r.p99_ms:.3f} | {r.server_cpu:.0%} | {r.client_cpu:.0%}"
            f" | {r.server_us_per_chunk:.2f} |"
        )
    return lines


def fmt_rate(rate: float | None) -> str:
    return f"{rate:,.0f}" if rate is not None else "n/a"


def ratio_table(results: Sequence[LevelResult], baselines: Sequence[str]) -> list[str]:
    """Medians per client, format and level: ours, each baseline, ours/baseline, and the
    median CPU shares of our server and of the client during our runs."""
    head = f"| client | format | concurrency | {OURS} chunks/s |"
    rule = "|---|---|---:|---:|"
    for name in baselines:
        head += f" {name} chunks/s | ratio vs {name} |"
        rule += "---:|---:|"
    head += f" {OURS} CPU | client CPU | {OURS} CPU µs/chunk |"
    rule += "---:|---:|---:|"
    lines = [head, rule]
    keys: dict[tuple[ClientKind, str, int], None] = {}
    for r in results:
        if r.server == OURS:
            keys[r.client, r.format, r.streams] = None
    for client, fmt, streams in keys:
        ours = median_rate(results, OURS, client, streams, fmt)
        row = f"| {client} | {fmt} | {streams} | {fmt_rate(ours)} |"
        for name in baselines:
            base = median_rate(results, name, client, streams, fmt)
            ratio = f"{ours / base:.2f}x" if ours is not None and base else "n/a"
            row += f" {fmt_rate(base)} | {ratio} |"
        runs = runs_of(results, OURS, client, streams, fmt)
        row += f" {median_share([r.server_cpu for r in runs])}"
        row += f" | {median_share([r.client_cpu for r in runs])}"
        row += f" | {statistics.median(r.server_us_per_chunk for r in runs):.2f} |"
        lines.append(row)
    return lines


def held_verdict(results: Sequence[LevelResult], chunks: int) -> str:
    """Every run of ours at 500 streams, with every client and format, must be clean."""
    runs = [r for r in results if r.server == OURS and r.streams == TARGET_STREAMS]
    if not runs:
        return f"NOT MEASURED: {OURS} at {TARGET_STREAMS} concurrent streams"
    worst = max(runs, key=lambda r: (r.errors, r.lost, -r.ok))
    formats = ", ".join(dict.fromkeys(r.format for r in runs))
    return verdict(
        all(r.clean for r in runs),
        f"{OURS} holds {TARGET_STREAMS} concurrent streams of {chunks} chunks with zero"
        f" errors and zero lost chunks ({len(runs)} run(s), formats: {formats};"
        f" worst: {worst.ok}/{worst.streams} ok, {worst.errors} errors, {worst.lost} lost)",
    )


def format_verdicts(results: Sequence[LevelResult], formats: Sequence[str]) -> list[str]:
    """One line per format level: ours held it in every run."""
    lines: list[str] = []
    for fmt in formats:
        runs = [r for r in results if r.server == OURS and r.format == fmt and r.client == "light"]
        runs = [r for r in runs if r.run > 0]
        if not runs:
            lines.append(f"NOT MEASURED: {OURS} in the {fmt} format")
            continue
        streams = max(r.streams for r in runs)
        lost, errors = sum(r.lost for r in runs), sum(r.errors for r in runs)
        lines.append(
            verdict(
                all(r.clean for r in runs),
                f"{OURS} holds {streams} concurrent {fmt} streams, each checked whole"
                f" ({len(runs)} run(s): {errors} errors, {lost} lost chunks)",
            )
        )
    return lines


def ratio_verdict(results: Sequence[LevelResult], target: Target, client: ClientKind) -> str:
    """PASS/FAIL on the ratio, unless the client, not the server, was the bottleneck.

    When the client process sits at (nearly) a full core while our server has CPU to spare,
    the rows measure the client: they say nothing about the servers and get no verdict.
    """
    what = f"chunks/s {OURS}/{target.baseline} at {target.streams} streams, {client} client"
    ours = median_rate(results, OURS, client, target.streams)
    base = median_rate(results, target.baseline, client, target.streams)
    if ours is None or not base:
        return f"NOT MEASURED: {what}"
    ratio = ours / base
    runs = runs_of(results, OURS, client, target.streams)
    client_cpu = statistics.median(r.client_cpu for r in runs)
    server_cpu = statistics.median(r.server_cpu for r in runs)
    if client_cpu >= CLIENT_BOUND_CPU and server_cpu < CLIENT_BOUND_CPU:
        word = (
            f"NO VERDICT (client-bound: the client used {client_cpu:.0%} of a core while"
            f" {OURS} used {server_cpu:.0%})"
        )
    else:
        word = PASS if ratio >= target.ratio else FAIL
    return (
        f"{word}: {what} = {ratio:.3f}x ({fmt_rate(ours)} vs {fmt_rate(base)};"
        f" target >= {target.ratio:.1f}x)"
    )


def target_verdicts(results: Sequence[LevelResult], args: argparse.Namespace) -> list[str]:
    """Each target whose baseline ran, judged with each of its clients that ran."""
    lines: list[str] = []
    for target in TARGETS:
        if target.baseline not in args.servers:
            continue
        judged: list[ClientKind] = [c for c in target.clients if c in args.clients]
        lines += [ratio_verdict(results, target, client) for client in judged]
        if not judged:
            lines.append(
                f"NOT MEASURED: chunks/s {OURS}/{target.baseline} at {target.streams} streams"
                f" (judged with the {', '.join(target.clients)} client)"
            )
    return lines


def error_notes(results: Sequence[LevelResult]) -> list[str]:
    return [
        f"- {r.server} ({r.client}, {r.format}) @ {r.streams} run {r.run}: {sample}"
        for r in results
        for sample in r.error_samples
    ]


def machine_lines(args: argparse.Namespace) -> list[str]:
    cpu_model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    packages = ("uvicorn", "uvloop", "httptools", "httpx")
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in packages)
    command = "uv run python benchmarks/mock_throughput.py " + shlex.join(sys.argv[1:])
    baselines: list[str] = []
    if MOCKLLM in args.servers:
        baselines.append(f"mockllm {MOCKLLM_VERSION} ({args.mockllm_mode} mode)")
    if AIMOCK in args.servers:
        baselines.append(f"aimock {AIMOCK_VERSION} (node {node_version()})")
    return [
        f"Command: `{command.strip()}`",
        "",
        f"Machine: {os.cpu_count()} CPUs ({cpu_model}), {platform.system()}"
        f" {platform.release()}, Python {platform.python_version()}; load average at start:"
        f" {load}",
        "",
        f"Versions: {versions}; baselines: {', '.join(baselines) or 'none'};"
        f" client event loop: {args.client_loop}",
    ]


def render(args: argparse.Namespace, results: Sequence[LevelResult], load: list[str]) -> str:
    parts = [*load, "", *results_table(results), ""]
    baselines = [name for name in BASELINES if name in args.servers]
    parts += [*ratio_table(results, baselines), ""]
    parts.append(held_verdict(results, args.chunks))
    parts += format_verdicts(results, args.formats)
    parts += target_verdicts(results, args)
    notes = error_notes(results)
    if notes:
        parts += ["", "Error samples:", *notes]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------
# Orchestration


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def spec_factories(
    args: argparse.Namespace, workdir: Path, text: str
) -> Iterator[Callable[[int], ServerSpec]]:
    if OURS in args.servers:
        flows = write_ours_flows(workdir, text)
        yield lambda port: mock_llm_spec(flows, port)
    if MOCKLLM in args.servers:
        responses = write_mockllm_responses(workdir, text, args.mockllm_mode)
        yield lambda port: mockllm_spec(responses, port, args.mockllm_mode)
    if AIMOCK in args.servers:
        cli = ensure_aimock()
        fixture = write_aimock_fixture(workdir, text)
        yield lambda port: aimock_spec(cli, fixture, port)


def server_order(results: Sequence[LevelResult]) -> list[LevelResult]:
    rank = {name: i for i, name in enumerate(SERVERS)}
    clients = {name: i for i, name in enumerate(CLIENTS)}
    return sorted(
        results,
        key=lambda r: (r.format != "openai", r.format, clients[r.client], r.streams,
                       rank[r.server], r.run),
    )  # fmt: skip


async def run_benchmark(args: argparse.Namespace, workdir: Path) -> list[LevelResult]:
    """Start every server, warm each up, then measure all levels, servers back to back;
    then each format level."""
    text = expected_text(args.chunks)
    results: list[LevelResult] = []
    async with contextlib.AsyncExitStack() as stack:
        servers: list[RunningServer] = []
        for factory in spec_factories(args, workdir, text):
            server = await stack.enter_async_context(serving(factory, workdir))
            log(f"{server.spec.name} ready at {server.base_url}")
            servers.append(server)
        for server in servers:
            warmups = [
                (c, Level(n, args.chunks, 0)) for c in args.clients for n in (10, args.warmup)
            ]
            warmups += [
                ("light", Level(args.warmup, args.chunks, 0, fmt))
                for fmt in args.formats
                if fmt in SPEAKS[server.spec.name]
            ]
            for client, level in warmups:
                if level.streams:
                    warm = await measure_level(server, client, level, text)
                    log(
                        f"warm-up {server.spec.name} ({client}, {level.format}):"
                        f" {warm.ok}/{level.streams} ok"
                    )

        async def measure(server: RunningServer, client: ClientKind, level: Level) -> None:
            results.append(await measure_level(server, client, level, text))
            log_result(results[-1])
            await asyncio.sleep(args.pause)

        for client in args.clients:
            for run in range(1, args.repeat + 1):
                for streams in args.streams:
                    for server in servers:
                        await measure(server, client, Level(streams, args.chunks, run))
        for run in range(1, args.repeat + 1):
            for fmt in args.formats:
                for server in servers:
                    if fmt in SPEAKS[server.spec.name]:
                        level = Level(args.format_streams, args.chunks, run, fmt)
                        await measure(server, "light", level)
    return server_order(results)


def log_result(r: LevelResult) -> None:
    log(
        f"run {r.run} {r.server} ({r.client}, {r.format}) @ {r.streams}:"
        f" {r.chunks_per_s:,.0f} chunks/s, {r.ok}/{r.streams} ok, {r.errors} errors,"
        f" {r.lost} lost, server CPU {r.server_cpu:.0%}, client CPU {r.client_cpu:.0%}"
    )


def names(text: str) -> list[str]:
    """`a,b c` style lists: commas or spaces."""
    return [name for name in text.replace(",", " ").split() if name]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument(
        "--streams", type=int, nargs="+", default=[50, 200, TARGET_STREAMS],
        help="concurrency levels (concurrent streams), default: 50 200 500",
    )  # fmt: skip
    parser.add_argument("--chunks", type=int, default=200, help="chunks per stream (M)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per level")
    parser.add_argument(
        "--baselines", nargs="+", default=None, metavar="NAME",
        help="baselines to measure next to ours: mockllm, aimock (default: both;"
        " `mockllm,aimock` works too; `none` for ours only)",
    )  # fmt: skip
    parser.add_argument(
        "--servers", nargs="+", choices=SERVERS, default=None,
        help="which servers to measure (default: ours and every baseline)",
    )  # fmt: skip
    parser.add_argument("--skip-baseline", action="store_true", help=f"measure {OURS} only")
    parser.add_argument(
        "--mockllm-mode", choices=["tuned", "stock"], default="tuned",
        help="tuned: plain uvicorn with uvloop/httptools, no reload, no access log (default);"
        " stock: mockllm's own `mockllm start` CLI",
    )  # fmt: skip
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between measurements")
    parser.add_argument(
        "--warmup", type=int, default=200,
        help="concurrent streams of each server's warm-up round per client, after one of 10"
        " (default: 200, so that node's JIT has compiled aimock's hot path; 0: only 10)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="also write the report (markdown) to FILE")
    parser.add_argument(
        "--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS),
        help="benchmark clients: light (keeps the reads, parses after the clock), raw"
        " (asyncio protocol + httptools, parses as it reads) and httpx (one shared"
        " httpx.AsyncClient, as an application would stream)",
    )  # fmt: skip
    parser.add_argument(
        "--formats", nargs="*", default=["ollama", "responses"], metavar="FORMAT",
        help=f"wire formats run at --format-streams with the light client ({', '.join(FORMATS)});"
        " default: ollama responses; none with an empty list",
    )  # fmt: skip
    parser.add_argument(
        "--format-streams", type=int, default=TARGET_STREAMS,
        help="concurrent streams of each format level (default: 500)",
    )  # fmt: skip
    parser.add_argument(
        "--client-loop", choices=["uvloop", "asyncio"], default="uvloop",
        help="event loop of the benchmark client",
    )  # fmt: skip
    args = parser.parse_args(argv)
    baselines = list(BASELINES)
    if args.baselines is not None:
        baselines = [name for item in args.baselines for name in names(item) if name != "none"]
        unknown = sorted(set(baselines) - set(BASELINES))
        if unknown:
            parser.error(f"unknown baseline(s) {', '.join(unknown)}; known: mockllm, aimock")
    if args.servers is None:
        args.servers = [OURS, *dict.fromkeys(baselines)]
    if args.skip_baseline:
        args.servers = [s for s in args.servers if s not in BASELINES]
    unknown_formats = sorted(set(args.formats) - set(FORMATS))
    if unknown_formats:
        parser.error(f"unknown format(s) {', '.join(unknown_formats)}; known: {', '.join(FORMATS)}")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    if args.chunks < 1 or args.repeat < 1 or min(args.streams) < 1 or args.format_streams < 1:
        parser.error("--chunks, --repeat, --streams and --format-streams must be positive")
    return args


def new_loop(kind: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if kind == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    header = machine_lines(args)  # before the run, so the load average is the idle one
    with (
        tempfile.TemporaryDirectory(prefix="mock-bench-") as tmp,
        asyncio.Runner(loop_factory=new_loop(args.client_loop)) as runner,
    ):
        results = runner.run(run_benchmark(args, Path(tmp)))
    report = render(args, results, header)
    print(report, end="")
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    return exit_status(report.splitlines())


if __name__ == "__main__":
    sys.exit(main())
