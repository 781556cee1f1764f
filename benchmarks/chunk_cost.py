"""What one chunk costs through a proxy, with nginx as the floor (issue 43).

Three measurements, each alternating its servers round by round in one run:

- CPU per chunk: N concurrent streams of LONG_FLOW (a clean answer of about 250 chunks)
  from the mock, straight, through nginx and through the guard (one worker, the filter on);
  each server's own CPU (its process group's, /proc) over the chunks its clients received.
- Latency per chunk: N concurrent streams from benchmarks/stamping_upstream.py, each chunk
  carrying the time it was written, STAMPED_CHUNKS chunks STAMPED_PACE_MS apart (a model's
  pace), straight, through nginx and through the guard; each chunk's latency is its read
  time minus its write time, and a proxy's added latency is its percentile minus the
  straight stream's.
- Memory per open stream: MEMORY_STREAMS streams held open at once through nginx and the
  guard; each server's resident memory (its group's VmRSS) with every stream open, minus
  the same server's idle, over the streams.

The client is benchmarks/turns.py's, in this process; it shares the machine's cores with
the servers, so throughput here is the client's as much as the servers' (docs/benchmarks.md);
CPU per chunk and memory are each server's own, whatever the client's speed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import statistics
import sys
import time
from collections.abc import Sequence

from measure import group_rss, percentile
from servers import REPO_ROOT, RunningServer, ServerSpec
from turns import (
    Keys,
    Turn,
    chat_streams,
    data_chunks,
    failed,
    measured,
    post_request,
    stream_one,
)
from verdicts import verdict

CLEAN_TEXT = (
    "Backups run nightly at 02:00 with restic to the NAS, and the newest snapshot is verified"
    " every Sunday. To restore a file, follow the steps in the backup runbook."
)
CLEAN_WORDS = CLEAN_TEXT.split(" ")
LONG_WORDS = 250
LONG_TEXT = " ".join(CLEAN_WORDS[i % len(CLEAN_WORDS)] for i in range(LONG_WORDS))
LONG_FLOW = {
    "long": {
        "description": "a clean answer of about 250 chunks (the proxy benchmark's cost rounds)",
        "steps": [{"content": LONG_TEXT}],
    }
}
STAMPED_CHUNKS = 100
STAMPED_PACE_MS = 10
MEMORY_STREAMS = 1000
MEMORY_SHAPE = "stamp-60x100"  # 60 chunks 100 ms apart: six seconds open
CPU_RATIO_TARGET = 3.0
"""The guard's CPU per chunk, at most this many times nginx's (issue 43)."""
LATENCY_RATIO_TARGET = 2.0
"""The guard's added latency per chunk (p50, p99), at most this many times nginx's."""
STAMP = re.compile(rb"t=(\d+) ")
OPEN_TIMEOUT_S = 60.0  # a hang guard for the memory round's streams to open, not a claim


def stamping_spec(port: int) -> ServerSpec:
    argv = [sys.executable, str(REPO_ROOT / "benchmarks" / "stamping_upstream.py"),
            "--port", str(port)]  # fmt: skip
    return ServerSpec("stamping-upstream", argv, {}, REPO_ROOT, "/healthz")


def stamped_body(shape: str) -> dict[str, object]:
    return {"model": shape, "stream": True, "messages": [{"role": "user", "content": "?"}]}


async def stamped_streams(server: RunningServer, shape: str, count: int) -> list[Turn]:
    request = post_request(server.port, "/v1/chat/completions", stamped_body(shape))
    return list(await asyncio.gather(*(stream_one(server.port, request, b"t=")
                                       for _ in range(count))))  # fmt: skip


def chunk_latencies_ms(turns: Sequence[Turn]) -> list[float]:
    """Each stamped chunk's latency: the read that carried it, minus its write time."""
    latencies: list[float] = []
    for turn in turns:
        for piece, read_at in zip(turn.body, turn.reads, strict=True):
            read_ns = read_at * 1e9
            latencies.extend((read_ns - int(ns)) / 1e6 for ns in STAMP.findall(piece))
    return sorted(latencies)


@dataclasses.dataclass
class Cost:
    """One server's CPU rounds."""

    chunks: int = 0
    cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    chunks_s: list[float] = dataclasses.field(default_factory=list[float])
    failed: int = 0

    @property
    def cpu_us(self) -> float:
        return self.cpu_s / max(self.chunks, 1) * 1e6


async def cpu_rounds(
    servers: dict[str, RunningServer], keys: Keys, streams: int, rounds: int
) -> dict[str, Cost]:
    costs = {name: Cost() for name in servers}
    for server in servers.values():  # warm-up: pools fill
        await chat_streams(server, "long", streams, keys)
    for _ in range(rounds):
        for name, server in servers.items():
            done = await measured(server, chat_streams(server, "long", streams, keys))
            cost = costs[name]
            cost.chunks += data_chunks(done.turns)
            cost.cpu_s += done.server_cpu_s
            cost.client_cpu_s += done.client_cpu_s
            cost.chunks_s.append(data_chunks(done.turns) / done.wall_s)
            cost.failed += failed(done.turns)
    return costs


@dataclasses.dataclass
class Paced:
    """One path's paced rounds: each chunk's latency, and the server's CPU per chunk."""

    latencies_ms: list[float] = dataclasses.field(default_factory=list[float])
    chunks: int = 0
    cpu_s: float = 0.0
    failed: int = 0

    @property
    def cpu_us(self) -> float:
        return self.cpu_s / max(self.chunks, 1) * 1e6


async def latency_rounds(
    servers: dict[str, RunningServer], streams: int, rounds: int
) -> dict[str, Paced]:
    shape = f"stamp-{STAMPED_CHUNKS}x{STAMPED_PACE_MS}"
    paced = {name: Paced() for name in servers}
    for server in servers.values():  # warm-up
        await stamped_streams(server, shape, streams)
    for _ in range(rounds):
        for name, server in servers.items():
            done = await measured(server, stamped_streams(server, shape, streams))
            path = paced[name]
            path.failed += failed(done.turns)
            path.latencies_ms += chunk_latencies_ms(done.turns)
            path.chunks += data_chunks(done.turns)
            path.cpu_s += done.server_cpu_s
    for path in paced.values():
        path.latencies_ms.sort()
    return paced


async def memory_per_stream(server: RunningServer) -> tuple[float, int]:
    """The server's resident memory per open stream, KiB, and the streams that failed."""
    idle = group_rss(server.proc.pid)
    request = post_request(server.port, "/v1/chat/completions", stamped_body(MEMORY_SHAPE))
    turns = [Turn() for _ in range(MEMORY_STREAMS)]
    streaming = asyncio.gather(*(stream_one(server.port, request, b"t=", t) for t in turns))
    open_rss = 0
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    # Every stream is open once the client has read a chunk of each: look every 50 ms.
    while time.monotonic() < deadline and not streaming.done():
        await asyncio.sleep(0.05)
        if all(t.first is not None for t in turns):
            open_rss = group_rss(server.proc.pid)
            break
    await streaming
    bad = failed(turns) + (MEMORY_STREAMS if not open_rss else 0)
    return (open_rss - idle) / 1024 / MEMORY_STREAMS, bad


def lines(
    costs: dict[str, Cost],
    paced: dict[str, Paced],
    memory: dict[str, tuple[float, int]],
    streams: int,
    rounds: int,
) -> list[str]:
    nginx_us, guard_us = costs["nginx"].cpu_us, costs["guard"].cpu_us
    straight = paced["straight"].latencies_ms

    def added(name: str) -> tuple[float, float]:
        values = paced[name].latencies_ms
        return (percentile(values, 50) - percentile(straight, 50),
                percentile(values, 99) - percentile(straight, 99))  # fmt: skip

    out = [
        f"## What a chunk costs: {streams} concurrent streams of about {LONG_WORDS} chunks,"
        f" {rounds} rounds, the servers alternated",
        "",
        "| server | chunks/s | server CPU per chunk µs | against nginx | client CPU per chunk µs"
        " | failed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, cost in costs.items():
        out.append(
            f"| {name} | {statistics.median(cost.chunks_s):.0f} | {cost.cpu_us:.2f} |"
            f" {cost.cpu_us / nginx_us:.1f}x | {cost.client_cpu_s / max(cost.chunks, 1) * 1e6:.2f}"
            f" | {cost.failed} |"
        )
    out += [
        "",
        f"Paced: {streams} concurrent streams of {STAMPED_CHUNKS} chunks {STAMPED_PACE_MS} ms"
        f" apart ({streams * 1000 // STAMPED_PACE_MS} chunks/s, a chunk a read, as a model"
        f" streams), {rounds} rounds; latency from the upstream's write to the client's read:",
        "",
        "| path | p50 ms | p99 ms | added p50 ms | added p99 ms | server CPU per chunk µs |"
        " failed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, path in paced.items():
        a50, a99 = added(name)
        out.append(
            f"| {name} | {percentile(path.latencies_ms, 50):.3f} |"
            f" {percentile(path.latencies_ms, 99):.3f} | {a50:+.3f} | {a99:+.3f} |"
            f" {path.cpu_us:.2f} | {path.failed} |"
        )
    guard_added, nginx_added = added("guard"), added("nginx")
    out += [
        "",
        f"Memory per open stream, {MEMORY_STREAMS} streams open at once:"
        + "".join(f" {name} {kib:.1f} KiB ({bad} failed);" for name, (kib, bad) in memory.items()),
        "",
        verdict(
            guard_us <= CPU_RATIO_TARGET * nginx_us,
            f"the guard's CPU per chunk {guard_us:.2f} µs, {guard_us / nginx_us:.1f}x nginx's"
            f" {nginx_us:.2f} µs (<= {CPU_RATIO_TARGET:.0f}x)",
        ),
        verdict(
            all(
                g <= LATENCY_RATIO_TARGET * max(n, 0.0)
                for g, n in zip(guard_added, nginx_added, strict=True)
            ),
            f"the guard's added latency per chunk p50 {guard_added[0]:+.3f} ms, p99"
            f" {guard_added[1]:+.3f} ms; nginx's {nginx_added[0]:+.3f}, {nginx_added[1]:+.3f}"
            f" (<= {LATENCY_RATIO_TARGET:.0f}x)",
        ),
        verdict(
            not any(c.failed for c in costs.values())
            and not any(p.failed for p in paced.values())
            and not any(bad for _, bad in memory.values()),
            "every stream of these rounds answered 200 and ended",
        ),
    ]
    return out
