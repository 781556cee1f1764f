"""Streaming throughput of `mock_llm` against stacklok's `mockllm`, measured in one run.

What it measures
----------------
Each server runs as a subprocess on a free loopback port; this process is the client. At
each level it opens N concurrent streaming chat completions (`"stream": true`) whose
answer is the same M-character text cut one character per chunk, so every stream should
carry exactly M content chunks. Per server, client and level it reports:

- streams ok: no error, exactly M non-empty `delta.content` chunks, joined text exact;
- errors: streams that raised, answered non-200, carried an error payload, or ended
  without `data: [DONE]` (or inside the chunked body);
- lost chunks: the sum over all streams of `M - received` where a stream got fewer;
- chunks/s: all content chunks received / wall time from the first request sent to the
  last stream finished;
- p50 and p99 gap: time between consecutive content chunks of one stream, as the client
  saw them arrive (chunks that arrive in the same socket read have a gap of 0);
- server and client CPU: CPU seconds of the server's process group and of this process,
  as a share of the wall time (Linux `/proc`). Near 100% marks the bottleneck; a
  throughput ratio only compares the servers when the client is not the one at 100%.

Two clients (`--clients`), both in this process on one event loop:

- raw: asyncio protocols with httptools' C HTTP/1.1 parser, one connection per stream and
  one JSON parse per socket read. It costs the client a fraction of what either server
  spends per chunk, so the servers are what it measures. The target ratio is judged here.
- httpx: one shared `httpx.AsyncClient` sized for N connections, as an application (or the
  OpenAI SDK) would stream. It saturates a core first (h11 per chunk, and httpcore's pool
  bookkeeping grows with N), so it shows what such a client sees, not the servers' limit.

Each client's measurements run together; within them the servers are measured back to
back at every level and repetition (`--repeat`, ratio of medians), so a noisy machine
affects both. The baseline is `mockllm` from PyPI in an isolated `uv tool run`
environment (never added to this project), lag disabled. By default it gets its best
configuration (`--mockllm-mode tuned`): plain `uvicorn` with the same uvicorn version and
extras (uvloop, httptools) as ours, no reload, no access log, and a responses file whose
mtime is a whole second (mockllm compares the float mtime to a truncated int, so otherwise
it re-reads and re-logs the YAML on every lookup). `--mockllm-mode stock` runs its own
`mockllm start` CLI (reload on, access log, h11 and the asyncio loop).

mockllm looks the answer up twice when streaming (the prompt, then the answer text as if
it were a prompt), so its responses file maps the trigger to the text and the text to
itself; without that it streams its default answer. Both servers' input files are
generated for the chosen M in a temporary directory.

Targets (a report, not a test): our server holds 500 concurrent streams with zero errors
and zero lost chunks (every run, every client), and reaches at least 2x mockllm's chunks/s
at 500 streams. A missed target prints FAIL and the command exits 1.
A client that ran at 90% of a core or more while our server had CPU to spare measured
itself, not the servers: its ratio is printed with NO VERDICT.

Reproduce
---------
    uv run python benchmarks/mock_throughput.py                      # 50 and 500 streams
    uv run python benchmarks/mock_throughput.py --streams 500 --chunks 200 --repeat 5 \\
        --clients raw --out /tmp/bench.md
    uv run python benchmarks/mock_throughput.py --skip-baseline      # ours only
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import itertools
import json
import math
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, cast

import httptools
import httpx
import yaml
from verdicts import FAIL, PASS, exit_status, verdict

REPO_ROOT = Path(__file__).resolve().parent.parent
FLOW_NAME = "bench"
TRIGGER = f"[[mock:{FLOW_NAME}]]"
MODEL = "gpt-4o-mini"
ALPHABET = string.ascii_letters + string.digits
MOCKLLM_VERSION = "0.0.8"
TARGET_STREAMS = 500
TARGET_RATIO = 2.0
CLIENT_BOUND_CPU = 0.9  # a client at this share of a core is the bottleneck
OURS = "mock_llm"
BASELINE = "mockllm"
READY_TIMEOUT_S = 180.0
STREAM_TIMEOUT_S = 300.0
JSON_DECODER = json.JSONDecoder()

MockllmMode = Literal["tuned", "stock"]
ClientKind = Literal["raw", "httpx"]


# ---------------------------------------------------------------------------------------
# Data


class Level(NamedTuple):
    """One measurement: how many concurrent streams, of how many chunks, which repetition."""

    streams: int
    chunks: int
    run: int


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


@dataclass(frozen=True)
class ServerSpec:
    """How to start one server and how to tell that it is ready."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    ready_path: str


@dataclass
class RunningServer:
    """A started server subprocess (its own process group) and its base URL."""

    spec: ServerSpec
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


# ---------------------------------------------------------------------------------------
# Fixtures: the answer text and each server's configuration


def expected_text(length: int) -> str:
    """The answer both servers stream: letters and digits only, so no quoting issues."""
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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def uv_executable() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        raise RuntimeError("the mockllm baseline needs `uv` on PATH (or --skip-baseline)")
    return found


def module_spec(
    module: str, port: int, *args: str, env: dict[str, str] | None = None
) -> ServerSpec:
    """`python -m MODULE --host 127.0.0.1 --port PORT ARGS...` from the checkout, ready when
    its /healthz answers."""
    argv = [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port), *args]
    return ServerSpec(module, argv, dict(os.environ) if env is None else env, REPO_ROOT, "/healthz")


def ours_spec(flows: Path, port: int) -> ServerSpec:
    return module_spec(OURS, port, "--flows", str(flows))


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
    return ServerSpec(BASELINE, argv, env, responses.parent, "/models")


# ---------------------------------------------------------------------------------------
# Server lifecycle


def start_server(spec: ServerSpec, port: int, log_dir: Path) -> RunningServer:
    """Start the server in its own process group, logging to a file (never a pipe)."""
    log_path = log_dir / f"{spec.name}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            spec.argv,
            cwd=spec.cwd,
            env=spec.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return RunningServer(spec, proc, port, log_path)


def stop_server(server: RunningServer) -> None:
    """Terminate the server's process group (only the group this script created)."""
    if server.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.proc.pid, signal.SIGTERM)
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(timeout=10)
    if group_stats(server.proc.pid):  # stragglers of our group (e.g. a reloader's worker)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.proc.pid, signal.SIGKILL)


def log_tail(server: RunningServer, lines: int = 30) -> str:
    text = server.log_path.read_text(encoding="utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


async def wait_ready(server: RunningServer) -> None:
    """Poll the server's readiness path until it answers 200, or fail with its log."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    url = server.base_url + server.spec.ready_path
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if server.proc.poll() is not None:
                raise RuntimeError(
                    f"{server.spec.name} exited with {server.proc.returncode}:\n" + log_tail(server)
                )
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url)).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(
        f"{server.spec.name} not ready after {READY_TIMEOUT_S}s:\n{log_tail(server)}"
    )


@contextlib.asynccontextmanager
async def serving(
    spec_for_port: Callable[[int], ServerSpec], log_dir: Path
) -> AsyncGenerator[RunningServer]:
    """Start a server on a free port, wait until ready, and always stop it afterwards."""
    port = free_port()
    server = start_server(spec_for_port(port), port, log_dir)
    try:
        await wait_ready(server)
        yield server
    finally:
        stop_server(server)


def group_stats(pgid: int) -> list[list[str]]:
    """`/proc/PID/stat` fields (after the command name) of the live members of a group."""
    members: list[list[str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid:
            members.append(fields)
    return members


def group_cpu_seconds(pgid: int) -> float:
    """User+system CPU seconds of the live processes in one process group (Linux /proc)."""
    ticks = sum(int(fields[11]) + int(fields[12]) for fields in group_stats(pgid))
    return ticks / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------
# Client


def request_body() -> bytes:
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": TRIGGER}]}
    return json.dumps(body).encode()


class SseReader:
    """Incremental SSE `data:` line parser that counts content chunks and their arrival.

    Fed the response body as it arrives (already de-chunked); every `data:` line holds one
    chunk JSON or `[DONE]`. Non-empty `delta.content` strings count as content chunks.
    """

    def __init__(self, result: StreamResult) -> None:
        self.result = result
        self.parts: list[str] = []
        self.pending = b""
        self.done = False

    def feed(self, data: bytes, now: float) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        if self.done:
            return
        payloads = [line[5:].strip() for line in lines if line.startswith(b"data:")]
        if b"[DONE]" in payloads:
            self.done = True
            payloads = payloads[: payloads.index(b"[DONE]")]
        if payloads:  # one json.loads per read, not per chunk: keeps the client cheap
            batch = "[" + b",".join(payloads).decode() + "]"
            for chunk in JSON_DECODER.decode(batch):
                self.handle(chunk, now)

    def handle(self, chunk: dict[str, Any], now: float) -> None:
        if chunk.get("error"):
            self.fail(f"error payload: {str(chunk['error'])[:120]}")
            return
        for choice in chunk.get("choices") or []:
            content = (choice.get("delta") or {}).get("content")
            if isinstance(content, str) and content:
                self.result.chunks += 1
                self.result.arrivals.append(now)
                self.parts.append(content)

    def fail(self, error: str) -> None:
        self.result.error = self.result.error or error

    def finish(self) -> StreamResult:
        self.result.text = "".join(self.parts)
        if not self.done:
            self.fail("stream ended without [DONE]")
        return self.result


# httpx client: what an application (or the OpenAI SDK) would use.


async def httpx_stream(client: httpx.AsyncClient, url: str) -> StreamResult:
    """Run one streaming completion through httpx and record what arrived and when."""
    sse = SseReader(StreamResult())
    headers = {"content-type": "application/json"}
    try:
        async with client.stream("POST", url, content=request_body(), headers=headers) as resp:
            if resp.status_code != 200:
                await resp.aread()
                sse.fail(f"HTTP {resp.status_code}")
                return sse.result
            async for data in resp.aiter_raw():
                sse.feed(data, time.perf_counter())
    except Exception as exc:  # every failure is a counted error, never a crash
        sse.fail(f"{type(exc).__name__}: {exc}"[:160])
    return sse.finish()


async def httpx_level(url: str, streams: int) -> list[StreamResult]:
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    timeout = httpx.Timeout(STREAM_TIMEOUT_S, connect=60.0, pool=STREAM_TIMEOUT_S)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        return await asyncio.gather(*(httpx_stream(client, url) for _ in range(streams)))


# Raw client: an asyncio Protocol with httptools' C HTTP/1.1 parser and no per-chunk
# awaits, so that the client's cost per chunk stays below the servers' and the servers,
# not the client, are what is measured.


def raw_request(host: str, port: int) -> bytes:
    body = request_body()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class RawSseProtocol(asyncio.Protocol):
    """One streaming completion on its own connection; `finished` resolves at close."""

    def __init__(self, request: bytes, finished: asyncio.Future[StreamResult]) -> None:
        self.request = request
        self.finished = finished
        self.sse = SseReader(StreamResult())
        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.complete = False
        self.transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)  # uvloop's is no subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        try:
            self.parser.feed_data(data)
            if self.body:  # everything this read delivered is parsed in one go
                self.sse.feed(b"".join(self.body), now)
                self.body.clear()
        except Exception as exc:  # a protocol or JSON error is a counted stream error
            self.sse.fail(f"{type(exc).__name__}: {exc}"[:160])
            self.close()

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status != 200:
            self.sse.fail(f"HTTP {status}")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True
        self.close()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.complete:
            self.sse.fail(f"connection closed mid-response ({exc or 'EOF'})")
        if not self.finished.done():
            self.finished.set_result(self.sse.finish())


async def raw_stream(host: str, port: int) -> StreamResult:
    """Run one streaming completion over a raw connection; record what arrived and when."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[StreamResult] = loop.create_future()
    try:
        await loop.create_connection(
            lambda: RawSseProtocol(raw_request(host, port), finished), host, port
        )
    except OSError as exc:  # a refused or reset connect is a counted stream error
        return StreamResult(error=f"{type(exc).__name__}: {exc}"[:160])
    try:
        return await asyncio.wait_for(asyncio.shield(finished), timeout=STREAM_TIMEOUT_S)
    except TimeoutError:
        return StreamResult(error=f"no end of stream within {STREAM_TIMEOUT_S:.0f}s")


async def raw_level(host: str, port: int, streams: int) -> list[StreamResult]:
    return await asyncio.gather(*(raw_stream(host, port) for _ in range(streams)))


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending sequence (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


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
    """N concurrent streams against one server; the clock covers first send to last end."""
    streams = level.streams
    cpu_server0 = group_cpu_seconds(server.proc.pid)
    cpu_client0 = time.process_time()
    start = time.perf_counter()
    if client == "raw":
        results = await raw_level("127.0.0.1", server.port, streams)
    else:
        results = await httpx_level(server.base_url + "/v1/chat/completions", streams)
    wall = time.perf_counter() - start
    cpu_client = time.process_time() - cpu_client0
    cpu_server = group_cpu_seconds(server.proc.pid) - cpu_server0
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
    streams, chunks, run = level
    errors = [r.error for r in results if r.error]
    ok = sum(1 for r in results if not r.error and r.chunks == chunks and r.text == text)
    lost = sum(max(0, chunks - r.chunks) for r in results)
    gaps = gaps_ms(results)
    return LevelResult(
        server=who[0],
        client=who[1],
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


def median_rate(
    results: Sequence[LevelResult], name: str, client: ClientKind, streams: int
) -> float | None:
    rates = [
        r.chunks_per_s
        for r in results
        if r.server == name and r.client == client and r.streams == streams
    ]
    return statistics.median(rates) if rates else None


def results_table(results: Sequence[LevelResult]) -> list[str]:
    lines = [
        "| server | client | concurrency | chunks/stream | run | streams ok | errors"
        " | lost chunks | chunks/s | p50 gap ms | p99 gap ms | server CPU | client CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.server} | {r.client} | {r.streams} | {r.chunks} | {r.run}"
            f" | {r.ok}/{r.streams} | {r.errors} | {r.lost} | {r.chunks_per_s:,.0f}"
            f" | {r.p50_ms:.3f} | {r.p99_ms:.3f} | {r.server_cpu:.0%} | {r.client_cpu:.0%} |"
        )
    return lines


def fmt_rate(rate: float | None) -> str:
    return f"{rate:,.0f}" if rate is not None else "n/a"


def ratio_table(
    results: Sequence[LevelResult], clients: Sequence[ClientKind], levels: Sequence[int]
) -> list[str]:
    lines = [
        f"| client | concurrency | {OURS} chunks/s (median) | {BASELINE} chunks/s (median)"
        " | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for client in clients:
        for streams in levels:
            ours = median_rate(results, OURS, client, streams)
            base = median_rate(results, BASELINE, client, streams)
            ratio = f"{ours / base:.2f}x" if ours is not None and base else "n/a"
            lines.append(
                f"| {client} | {streams} | {fmt_rate(ours)} | {fmt_rate(base)} | {ratio} |"
            )
    return lines


def held_verdict(results: Sequence[LevelResult], chunks: int) -> str:
    """Every run of ours at 500 streams, with every client, must be clean."""
    runs = [r for r in results if r.server == OURS and r.streams == TARGET_STREAMS]
    if not runs:
        return f"NOT MEASURED: {OURS} at {TARGET_STREAMS} concurrent streams"
    clean = all(r.errors == 0 and r.lost == 0 and r.ok == r.streams for r in runs)
    worst = max(runs, key=lambda r: (r.errors, r.lost, -r.ok))
    return verdict(
        clean,
        f"{OURS} holds {TARGET_STREAMS} concurrent streams"
        f" of {chunks} chunks with zero errors and zero lost chunks ({len(runs)} run(s);"
        f" worst: {worst.ok}/{worst.streams} ok, {worst.errors} errors, {worst.lost} lost)",
    )


def ratio_verdict(results: Sequence[LevelResult], client: ClientKind) -> str:
    """PASS/FAIL on the ratio, unless the client, not the server, was the bottleneck.

    When the client process sits at (nearly) a full core while our server has CPU to spare,
    the rows measure the client: they say nothing about the servers and get no verdict.
    """
    ours = median_rate(results, OURS, client, TARGET_STREAMS)
    base = median_rate(results, BASELINE, client, TARGET_STREAMS)
    if ours is None or not base:
        return f"NOT MEASURED: chunks/s ratio at {TARGET_STREAMS} streams ({client} client)"
    ratio = ours / base
    runs = [r for r in results if r.server == OURS and r.client == client]
    runs = [r for r in runs if r.streams == TARGET_STREAMS]
    client_cpu = statistics.median(r.client_cpu for r in runs)
    server_cpu = statistics.median(r.server_cpu for r in runs)
    if client_cpu >= CLIENT_BOUND_CPU and server_cpu < CLIENT_BOUND_CPU:
        word = (
            f"NO VERDICT (client-bound: the client used {client_cpu:.0%} of a core while"
            f" {OURS} used {server_cpu:.0%})"
        )
    else:
        word = PASS if ratio >= TARGET_RATIO else FAIL
    return (
        f"{word}: chunks/s {OURS}/{BASELINE} at"
        f" {TARGET_STREAMS} streams, {client} client = {ratio:.3f}x"
        f" (target >= {TARGET_RATIO:.1f}x)"
    )


def error_notes(results: Sequence[LevelResult]) -> list[str]:
    return [
        f"- {r.server} ({r.client}) @ {r.streams} run {r.run}: {sample}"
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
    return [
        f"Command: `{command.strip()}`",
        "",
        f"Machine: {os.cpu_count()} CPUs ({cpu_model}), {platform.system()}"
        f" {platform.release()}, Python {platform.python_version()}; load average at start:"
        f" {load}",
        "",
        f"Versions: {versions}; baseline mockllm {MOCKLLM_VERSION} ({args.mockllm_mode} mode);"
        f" client event loop: {args.client_loop}",
    ]


def render(args: argparse.Namespace, results: Sequence[LevelResult], load: list[str]) -> str:
    parts = [*load, "", *results_table(results), ""]
    if BASELINE in args.servers:
        parts += [*ratio_table(results, args.clients, args.streams), ""]
    parts.append(held_verdict(results, args.chunks))
    if BASELINE in args.servers:
        parts += [ratio_verdict(results, client) for client in args.clients]
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
        yield lambda port: ours_spec(flows, port)
    if BASELINE in args.servers:
        responses = write_mockllm_responses(workdir, text, args.mockllm_mode)
        yield lambda port: mockllm_spec(responses, port, args.mockllm_mode)


async def run_benchmark(args: argparse.Namespace, workdir: Path) -> list[LevelResult]:
    """Start every server, warm each up, then measure all levels, servers back to back."""
    text = expected_text(args.chunks)
    results: list[LevelResult] = []
    async with contextlib.AsyncExitStack() as stack:
        servers: list[RunningServer] = []
        for factory in spec_factories(args, workdir, text):
            server = await stack.enter_async_context(serving(factory, workdir))
            log(f"{server.spec.name} ready at {server.base_url}")
            servers.append(server)
        for server in servers:
            for client in args.clients:
                warm = await measure_level(server, client, Level(10, args.chunks, 0), text)
                log(f"warm-up {server.spec.name} ({client}): {warm.ok}/10 ok")
        for client in args.clients:
            for run in range(1, args.repeat + 1):
                for streams in args.streams:
                    for server in servers:
                        level = Level(streams, args.chunks, run)
                        results.append(await measure_level(server, client, level, text))
                        log_result(results[-1])
                        await asyncio.sleep(args.pause)
    order = {name: i for i, name in enumerate(args.clients)}
    return sorted(results, key=lambda r: (order[r.client], r.streams, r.server != OURS, r.run))


def log_result(r: LevelResult) -> None:
    log(
        f"run {r.run} {r.server} ({r.client}) @ {r.streams}: {r.chunks_per_s:,.0f} chunks/s,"
        f" {r.ok}/{r.streams} ok, {r.errors} errors, {r.lost} lost"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument(
        "--streams", type=int, nargs="+", default=[50, TARGET_STREAMS],
        help="concurrency levels (concurrent streams), default: 50 500",
    )  # fmt: skip
    parser.add_argument("--chunks", type=int, default=200, help="chunks per stream (M)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per level")
    parser.add_argument(
        "--servers", nargs="+", choices=[OURS, BASELINE], default=[OURS, BASELINE],
        help="which servers to measure",
    )  # fmt: skip
    parser.add_argument("--skip-baseline", action="store_true", help=f"measure {OURS} only")
    parser.add_argument(
        "--mockllm-mode", choices=["tuned", "stock"], default="tuned",
        help="tuned: plain uvicorn with uvloop/httptools, no reload, no access log (default);"
        " stock: mockllm's own `mockllm start` CLI",
    )  # fmt: skip
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between measurements")
    parser.add_argument("--out", type=Path, help="also write the report (markdown) to FILE")
    parser.add_argument(
        "--clients", nargs="+", choices=["raw", "httpx"], default=["raw", "httpx"],
        help="benchmark clients: raw (asyncio protocol + httptools; measures the servers)"
        " and httpx (one shared httpx.AsyncClient, as an application would stream)",
    )  # fmt: skip
    parser.add_argument(
        "--client-loop", choices=["uvloop", "asyncio"], default="uvloop",
        help="event loop of the benchmark client",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.skip_baseline:
        args.servers = [s for s in args.servers if s != BASELINE]
    if args.chunks < 1 or args.repeat < 1 or min(args.streams) < 1:
        parser.error("--chunks, --repeat and --streams must be positive")
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
