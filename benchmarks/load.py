"""The notes chat under load: 200 concurrent turns through the app against the mock.

What it does
------------
The mock (`python -m mock_llm`) and the app (`python -m app`, pointed at the mock with
SG_LLM_BASE_URL, a fresh data folder) run as subprocesses on free loopback ports; this
process is a light client (asyncio protocols with httptools' C parser, one connection per
turn, the body kept as bytes and parsed only after the clock stops, so the client is not
what is measured). Phases, in one run:

1. warm-up: one round of N concurrent clean turns (the pools and caches fill), then the
   app's baseline: resident memory, threads, open file descriptors;
2. low load: clean turns one at a time, and the same stream straight from the mock, one at
   a time: p50 time to first delta (app) against time to first content chunk (mock);
3. clean load: `--rounds` rounds of N concurrent clean turns: turns/s, p50/p99 time to
   first delta, the app's CPU per turn, the client's CPU share; and the mock's own figures
   for N concurrent streams of the same flow straight from it;
4. mixed load: N concurrent turns over clean, tool-then-answer (a real read tool call),
   scaffold-recover (markup stripped, one recovery request) and a paced flow;
5. after it all: every turn ended with exactly one terminal frame (`done` or `error`) and
   the right one for its flow; the query log has exactly one row per `done` frame; the app's
   log never says "database is locked"; memory, threads and file descriptors are back to
   the baseline (threads and descriptors at most the baseline's; memory within 10%).

Targets (from issue 12; this 2-core machine, the client beside the servers): at most 5 ms
of app CPU per clean turn; at least 100 clean turns/s; p99 time to first delta under 1 s
at 200 concurrent; at low load, the app's p50 time to first delta within 5 ms of the mock's.
A missed target prints FAIL and the command exits 1.

Reproduce
---------
    uv run python benchmarks/load.py                       # 200 concurrent, 3 rounds
    uv run python benchmarks/load.py --turns 200 --rounds 5 --out /tmp/load.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httptools
import yaml
from mock_throughput import (
    RunningServer,
    ServerSpec,
    group_cpu_seconds,
    module_spec,
    ours_spec,
    percentile,
    serving,
)
from verdicts import report, verdict

TURN_TIMEOUT_S = 120.0  # a hang guard for one turn, not a timing claim
QUESTION = "When do backups run?"
CPU_TARGET_MS = 5.0
RATE_TARGET = 100.0
P99_TARGET_MS = 1000.0
LOW_LOAD_GAP_MS = 5.0
LOW_LOAD_TURNS = 40
MEMORY_SLACK = 0.10
MIXED = ("clean", "tool-then-answer", "scaffold-recover", "paced")
PACED_FLOW = {
    "paced": {
        "description": "a clean answer at a steady pace (the 'slow' turns of the mix)",
        "steps": [
            {
                "content": "Backups run nightly at 02:00 with restic to the NAS, and the"
                " newest snapshot is verified every Sunday.",
                "delay_ms": 20,
            }
        ],
    }
}


# --- the client ------------------------------------------------------------------------------


@dataclass
class Turn:
    """What one request got: status, the body's bytes, when the first delta arrived."""

    status: int = 0
    body: list[bytes] = field(default_factory=list[bytes])
    reads: list[float] = field(default_factory=list[float])  # arrival of each body piece
    sent: float = 0.0
    first: float | None = None  # arrival of the read that carried the first delta/content
    ended: float = 0.0
    error: str | None = None

    @property
    def ttfd_ms(self) -> float | None:
        return None if self.first is None else (self.first - self.sent) * 1000

    def frames(self) -> list[dict[str, Any]]:
        """The body's `data:` payloads as JSON (after the clock: this is the slow part)."""
        lines = b"".join(self.body).split(b"\n")
        return [
            json.loads(line[5:])
            for line in lines
            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"
        ]


class _Protocol(asyncio.Protocol):
    def __init__(self, request: bytes, marker: bytes, turn: Turn, done: asyncio.Future[None]):
        self.request, self.marker, self.turn, self.done = request, marker, turn, done
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.WriteTransport | None = None
        self.now = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)
        self.turn.sent = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.now = time.perf_counter()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.turn.error = f"HTTP parse error: {exc}"
            self._close()

    def on_headers_complete(self) -> None:
        self.turn.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self.turn.first is None and self.marker in body:
            self.turn.first = self.now
        self.turn.body.append(body)
        self.turn.reads.append(self.now)

    def on_message_complete(self) -> None:
        self.turn.ended = self.now
        self._close()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.turn.ended and self.turn.error is None:
            self.turn.error = f"connection closed mid-response ({exc or 'EOF'})"
        if not self.done.done():
            self.done.set_result(None)


def post_request(port: int, path: str, body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + data


async def stream_one(port: int, request: bytes, marker: bytes) -> Turn:
    loop = asyncio.get_running_loop()
    turn = Turn()
    done: asyncio.Future[None] = loop.create_future()
    try:
        await loop.create_connection(
            lambda: _Protocol(request, marker, turn, done), "127.0.0.1", port
        )
        await asyncio.wait_for(asyncio.shield(done), TURN_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        turn.error = f"{type(exc).__name__}: {exc}"[:160]
    return turn


class Keys:
    """A fresh mock KEY per request, so every turn plays its flow from the start."""

    def __init__(self) -> None:
        self.n = 0

    def trigger(self, flow: str) -> str:
        self.n += 1
        return f"[[mock:{flow}#load-{self.n}]]"


async def app_turns(app: RunningServer, flows: Sequence[str], keys: Keys) -> list[Turn]:
    requests = [
        post_request(app.port, "/api/chat", {"message": f"{QUESTION} {keys.trigger(f)}"})
        for f in flows
    ]
    return await asyncio.gather(*(stream_one(app.port, r, b'"type":"delta"') for r in requests))


async def mock_streams(mock: RunningServer, count: int, keys: Keys) -> list[Turn]:
    def body() -> dict[str, Any]:
        message = f"{QUESTION} {keys.trigger('clean')}"
        return {"model": "m", "stream": True, "messages": [{"role": "user", "content": message}]}

    requests = [post_request(mock.port, "/v1/chat/completions", body()) for _ in range(count)]
    return await asyncio.gather(*(stream_one(mock.port, r, b'"content":"') for r in requests))


# --- measuring -------------------------------------------------------------------------------


@dataclass
class Round:
    turns: list[Turn]
    wall_s: float
    server_cpu_s: float
    client_cpu_s: float


async def measured(server: RunningServer, run: Awaitable[list[Turn]]) -> Round:
    cpu0, client0, start = (
        group_cpu_seconds(server.proc.pid),
        time.process_time(),
        time.perf_counter(),
    )
    turns = await run
    wall = time.perf_counter() - start
    return Round(
        turns, wall, group_cpu_seconds(server.proc.pid) - cpu0, time.process_time() - client0
    )


def ms(values: Sequence[float], pct: float) -> float:
    return percentile(sorted(values), pct)


def ttfds(turns: Sequence[Turn]) -> list[float]:
    return [t for turn in turns if (t := turn.ttfd_ms) is not None]


@dataclass(frozen=True)
class Resources:
    rss_kib: int
    threads: int
    fds: int


def resources(pid: int) -> Resources:
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return Resources(
        int(status["VmRSS"].split()[0]), int(status["Threads"]), len(os.listdir(f"/proc/{pid}/fd"))
    )


def terminal_problems(turns: Sequence[Turn], expected: Sequence[str]) -> tuple[list[str], int]:
    """Problems with the turns' frames, and how many ended with `done`."""
    problems: list[str] = []
    done = 0
    for turn, want in zip(turns, expected, strict=True):
        if turn.error or turn.status != 200:
            problems.append(f"{want}: HTTP {turn.status} {turn.error or ''}".strip())
            continue
        kinds = [frame.get("type") for frame in turn.frames()]
        terminals = [k for k in kinds if k in ("done", "error")]
        if len(terminals) != 1 or kinds[-1] not in ("done", "error"):
            problems.append(f"{want}: terminal frames {terminals}")
        elif terminals[0] != "done":
            problems.append(f"{want}: ended with {terminals[0]}")
        else:
            done += 1
    return problems, done


# --- the run ---------------------------------------------------------------------------------


def app_spec(mock: RunningServer, data: Path, port: int) -> ServerSpec:
    env = dict(
        os.environ,
        SG_LLM_BASE_URL=f"{mock.base_url}/v1",
        SG_DATA_DIR=str(data),
        SG_LLM_TIMEOUT_S="120",
    )
    return module_spec("app", port, env=env)


async def run(args: argparse.Namespace) -> list[str]:
    n, keys = args.turns, Keys()
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sg-load-") as tmp:
        folder = Path(tmp)
        flows = folder / "load_flows.yaml"
        flows.write_text(yaml.safe_dump({"flows": PACED_FLOW}), encoding="utf-8")
        async with (
            serving(lambda port: ours_spec(flows, port), folder) as mock,
            serving(lambda port: app_spec(mock, folder / "data", port), folder) as app,
        ):
            await app_turns(app, ["clean"] * n, keys)  # warm-up
            base = resources(app.proc.pid)

            low_app = [(await app_turns(app, ["clean"], keys))[0] for _ in range(LOW_LOAD_TURNS)]
            low_mock = [(await mock_streams(mock, 1, keys))[0] for _ in range(LOW_LOAD_TURNS)]

            clean = [
                await measured(app, app_turns(app, ["clean"] * n, keys)) for _ in range(args.rounds)
            ]
            direct = [await measured(mock, mock_streams(mock, n, keys)) for _ in range(args.rounds)]
            mix = [MIXED[i % len(MIXED)] for i in range(n)]
            mixed = await measured(app, app_turns(app, mix, keys))

            await asyncio.sleep(args.settle_s)  # idle worker threads and sockets wind down
            after = resources(app.proc.pid)
            log_text = app.log_path.read_text(encoding="utf-8", errors="replace")
            log_text += (folder / "data" / "chat.log").read_text(encoding="utf-8", errors="replace")
        rows = _rows(folder / "data")

    all_clean = [t for r in clean for t in r.turns]
    problems, done = terminal_problems(all_clean, ["clean"] * len(all_clean))
    mixed_problems, mixed_done = terminal_problems(mixed.turns, mix)
    problems += mixed_problems
    warm_and_low = n + LOW_LOAD_TURNS
    expected_rows = warm_and_low + done + mixed_done

    turns = sum(len(r.turns) for r in clean)
    wall = sum(r.wall_s for r in clean)
    app_cpu_ms = sum(r.server_cpu_s for r in clean) / turns * 1000
    rate = statistics.median(len(r.turns) / r.wall_s for r in clean)
    client_share = sum(r.client_cpu_s for r in clean) / wall
    t_clean = ttfds(all_clean)
    direct_turns = [t for r in direct for t in r.turns]
    t_direct = ttfds(direct_turns)
    direct_rate = statistics.median(len(r.turns) / r.wall_s for r in direct)
    mock_cpu_ms = sum(r.server_cpu_s for r in direct) / len(direct_turns) * 1000
    low_app_p50 = ms(ttfds(low_app), 50)
    low_mock_p50 = ms(ttfds(low_mock), 50)
    t_mixed = ttfds(mixed.turns)

    out += [
        f"# Load: {n} concurrent turns, {args.rounds} rounds ({platform.python_version()},"
        f" {os.cpu_count()} cores)",
        "",
        "| measurement | turns | turns/s | p50 TTFD ms | p99 TTFD ms | server CPU/turn ms |"
        " client CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| app, clean, {n} concurrent | {turns} | {rate:.0f} | {ms(t_clean, 50):.0f} |"
        f" {ms(t_clean, 99):.0f} | {app_cpu_ms:.2f} | {client_share:.0%} |",
        f"| mock direct, same flow, {n} concurrent | {len(direct_turns)} | {direct_rate:.0f} |"
        f" {ms(t_direct, 50):.0f} | {ms(t_direct, 99):.0f} | {mock_cpu_ms:.2f} | |",
        f"| app, mixed ({', '.join(MIXED)}), {n} concurrent | {len(mixed.turns)} |"
        f" {len(mixed.turns) / mixed.wall_s:.0f} | {ms(t_mixed, 50):.0f} | {ms(t_mixed, 99):.0f} |"
        f" {mixed.server_cpu_s / len(mixed.turns) * 1000:.2f} | |",
        f"| app, clean, one at a time | {LOW_LOAD_TURNS} | | {low_app_p50:.1f} | | | |",
        f"| mock direct, one at a time | {LOW_LOAD_TURNS} | | {low_mock_p50:.1f} | | | |",
        "",
        f"resources after warm-up: {base}; after the run (+{args.settle_s:.0f} s idle): {after}",
        f"query-log rows {rows}, expected {expected_rows} (one per done frame)",
        "",
    ]
    for problem in problems[:10]:
        out.append(f"problem: {problem}")
    out += [
        verdict(
            not problems,
            f"every turn ended with exactly one terminal frame, the right one"
            f" ({len(problems)} problems)",
        ),
        verdict(rows == expected_rows, f"one query-log row per done frame ({rows} rows)"),
        verdict("database is locked" not in log_text, "no 'database is locked' in the app's log"),
        verdict(
            after.threads <= base.threads
            and after.fds <= base.fds
            and after.rss_kib <= base.rss_kib * (1 + MEMORY_SLACK),
            "threads, file descriptors and memory back to the baseline",
        ),
        verdict(
            app_cpu_ms <= CPU_TARGET_MS,
            f"app CPU per clean turn {app_cpu_ms:.2f} ms <= {CPU_TARGET_MS:.0f} ms",
        ),
        verdict(rate >= RATE_TARGET, f"clean turns/s {rate:.0f} >= {RATE_TARGET:.0f}"),
        verdict(
            ms(t_clean, 99) < P99_TARGET_MS,
            f"p99 time to first delta {ms(t_clean, 99):.0f} ms < {P99_TARGET_MS:.0f} ms",
        ),
        verdict(
            low_app_p50 - low_mock_p50 <= LOW_LOAD_GAP_MS,
            f"low-load p50 time to first delta: app {low_app_p50:.1f} ms, mock"
            f" {low_mock_p50:.1f} ms (gap <= {LOW_LOAD_GAP_MS:.0f} ms)",
        ),
    ]
    return out


def _rows(data: Path) -> int:
    with sqlite3.connect(data / "scaffold-guard.sqlite3") as db:
        return int(db.execute("SELECT COUNT(*) FROM query_log").fetchone()[0])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="concurrent turns (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="clean rounds (default 3)")
    parser.add_argument(
        "--settle-s",
        type=float,
        default=12.0,
        help="idle time before the resource check (anyio's idle threads exit after 10 s)",
    )
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    return report(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    sys.exit(main())
