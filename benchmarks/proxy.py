"""The guard proxy's cost: the same streams from the mock, straight and through the proxy.

The mock, the guard proxy (one worker, and two), and LiteLLM's proxy passing the same
streams on plainly (benchmarks/litellm_server.py: its isolated venv, built on first use)
run as subprocesses on loopback; benchmarks/turns.py's light client plays the same flow
against each, alternated round by round in one run: time to first content one at a time,
the throughput of N concurrent streams (streams/s and chunks/s, medians of the rounds)
with each server's CPU, and paced streams' reads (a proxy that buffered would deliver
fewer, later reads). Then what one chunk costs against the floor, nginx passing the same
streams on (benchmarks/chunk_cost.py: CPU and latency per chunk, memory per open stream).
A missed target (docs/benchmarks.md) prints FAIL and exits 1; so does a LiteLLM venv or an
nginx that cannot be had.

    uv run python benchmarks/proxy.py
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import platform
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from chunk_cost import (
    LONG_FLOW,
    cpu_rounds,
    latency_rounds,
    memory_per_stream,
    stamping_spec,
)
from chunk_cost import lines as cost_lines
from litellm_server import AUTHORIZATION, LiteLLMUnavailable, litellm_spec, litellm_venv_python
from nginx_server import NginxUnavailable, nginx_binary, nginx_spec
from servers import RunningServer, guard_spec, mock_llm_spec, serving
from turns import (
    CONTENT,
    Keys,
    Turn,
    chat_streams,
    data_chunks,
    failed,
    measured,
    ms,
    ttfds,
    write_paced_flows,
)
from verdicts import report, verdict

ADDED_TTFT_TARGET_MS = 5.0
PACED_READS_SHARE = 0.9
PACED_END_SLACK_MS = 5.0
PACED_STREAMS = 5
THROUGHPUT_SHARE = 0.8
"""The proxy's chunks/s at N concurrent streams, at least this share of the mock's."""
SERVERS = ("mock", "proxy", "proxy x2", "litellm")
"""The concurrent rounds' servers: straight, the guard with one worker and with two
(`--workers 2`), LiteLLM's proxy."""


def text_reads(turn: Turn) -> list[float]:
    """When each read that carried answer text arrived, in ms from the request."""
    return [
        (at - turn.sent) * 1000
        for at, piece in zip(turn.reads, turn.body, strict=True)
        if CONTENT in piece and b'"content":""' not in piece
    ]


@dataclasses.dataclass
class Loaded:
    """One server's concurrent rounds."""

    turns: list[Turn] = dataclasses.field(default_factory=list[Turn])
    streams_s: list[float] = dataclasses.field(default_factory=list[float])
    chunks_s: list[float] = dataclasses.field(default_factory=list[float])
    cpu_s: float = 0.0
    client_cpu_s: float = 0.0

    def cpu_ms(self) -> tuple[float, float]:
        """The server's and the client's CPU per stream, ms."""
        count = max(len(self.turns), 1)
        return self.cpu_s / count * 1000, self.client_cpu_s / count * 1000

    def row(self, name: str, mock: Loaded, streams: int) -> str:
        ratio = statistics.median(self.chunks_s) / statistics.median(mock.chunks_s)
        cpu_ms = self.cpu_ms()[0]
        return (
            f"| {name} | {statistics.median(self.streams_s):.0f} |"
            f" {statistics.median(self.chunks_s):.0f} | {ratio:.2f} |"
            f" {ms(ttfds(self.turns), 50):.0f} / {ms(ttfds(self.turns), 99):.0f} |"
            f" {cpu_ms:.2f} | {failed(self.turns)}"
            f" of {streams} x {len(self.streams_s)} |"
        )


async def run(args: argparse.Namespace) -> list[str]:
    keys = Keys()
    try:
        litellm_python = litellm_venv_python()
        nginx = nginx_binary()
    except (LiteLLMUnavailable, NginxUnavailable) as exc:
        return [verdict(False, f"{exc}: nothing to compare with")]
    with tempfile.TemporaryDirectory(prefix="sg-proxy-") as tmp:
        folder = Path(tmp)
        flows = write_paced_flows(folder, LONG_FLOW)
        if args.cost_only:
            return await against_nginx(args, keys, nginx, folder, flows)
        async with (
            serving(lambda port: mock_llm_spec(flows, port), folder) as mock,
            serving(
                lambda port: litellm_spec(litellm_python, mock, "m", folder, port), folder
            ) as litellm,
            serving(lambda port: guard_spec(mock, port), folder) as proxy,
            serving(
                lambda port: dataclasses.replace(
                    guard_spec(mock, port, "--workers", "2"), name="guard-2-workers"
                ),
                folder,
            ) as proxy2,
        ):
            lines = await measure(args, keys, mock, proxy, proxy2, litellm)
        return [*lines, "", *await against_nginx(args, keys, nginx, folder, flows)]


async def against_nginx(
    args: argparse.Namespace, keys: Keys, nginx: Path, folder: Path, flows: Path
) -> list[str]:
    """What a chunk costs through the guard and through nginx (benchmarks/chunk_cost.py),
    with only the servers each measurement needs running."""
    async with (
        serving(lambda port: mock_llm_spec(flows, port), folder) as mock,
        serving(lambda port: nginx_spec(nginx, mock, folder, port), folder) as mock_nginx,
        serving(lambda port: guard_spec(mock, port), folder) as mock_guard,
    ):
        costs = await cpu_rounds(
            {"mock": mock, "nginx": mock_nginx, "guard": mock_guard},
            keys, args.streams, args.rounds,
        )  # fmt: skip
    async with (
        serving(stamping_spec, folder) as stamper,
        serving(lambda port: nginx_spec(nginx, stamper, folder, port), folder) as stamp_nginx,
        serving(lambda port: guard_spec(stamper, port), folder) as stamp_guard,
    ):
        paced = await latency_rounds(
            {"straight": stamper, "nginx": stamp_nginx, "guard": stamp_guard},
            args.streams, args.rounds,
        )  # fmt: skip
        memory = {
            "nginx": await memory_per_stream(stamp_nginx),
            "guard": await memory_per_stream(stamp_guard),
        }
    return cost_lines(costs, paced, memory, args.streams, args.rounds)


async def measure(
    args: argparse.Namespace,
    keys: Keys,
    mock: RunningServer,
    proxy: RunningServer,
    proxy2: RunningServer,
    litellm: RunningServer,
) -> list[str]:
    servers = dict(zip(SERVERS, (mock, proxy, proxy2, litellm), strict=True))
    headers = {"litellm": AUTHORIZATION}
    for name, server in servers.items():  # warm-up: pools fill, workers start
        await chat_streams(server, "clean", args.streams, keys, headers.get(name, ""))
    low: dict[str, list[Turn]] = {"mock": [], "proxy": []}
    for _ in range(args.requests):
        low["mock"] += await chat_streams(mock, "clean", 1, keys)
        low["proxy"] += await chat_streams(proxy, "clean", 1, keys)
    loaded = {name: Loaded() for name in SERVERS}
    for _ in range(args.rounds):
        for name, server in servers.items():
            load = chat_streams(server, "clean", args.streams, keys, headers.get(name, ""))
            done = await measured(server, load)
            loaded[name].turns += done.turns
            loaded[name].streams_s.append(len(done.turns) / done.wall_s)
            loaded[name].chunks_s.append(data_chunks(done.turns) / done.wall_s)
            loaded[name].cpu_s += done.server_cpu_s
            loaded[name].client_cpu_s += done.client_cpu_s
    paced: dict[str, list[Turn]] = {"mock": [], "proxy": []}
    for _ in range(PACED_STREAMS):
        paced["mock"] += await chat_streams(mock, "paced", 1, keys)
        paced["proxy"] += await chat_streams(proxy, "paced", 1, keys)
    return lines(args, low, loaded, paced)


def lines(
    args: argparse.Namespace,
    low: dict[str, list[Turn]],
    loaded: dict[str, Loaded],
    paced: dict[str, list[Turn]],
) -> list[str]:
    ours = [*low.values(), *(loaded[name].turns for name in ("mock", "proxy", "proxy x2"))]
    unanswered = sum(failed(turns) for turns in ours)
    low_p50 = {name: ms(ttfds(turns), 50) for name, turns in low.items()}
    added = low_p50["proxy"] - low_p50["mock"]
    counts = {
        name: statistics.median(len(text_reads(t)) for t in turns) for name, turns in paced.items()
    }
    last = {
        name: statistics.median(max(text_reads(t), default=0.0) for t in turns)
        for name, turns in paced.items()
    }
    rate = {name: statistics.median(load.chunks_s) for name, load in loaded.items()}
    lost = failed(loaded["litellm"].turns)
    best = max(rate["proxy"], rate["proxy x2"])
    n = args.streams
    cores = os.cpu_count() or 1
    mock_ms, client_ms = loaded["mock"].cpu_ms()
    least_ms = mock_ms + client_ms  # a proxy serves the request and is a client upstream
    ceiling = cores / (2 * least_ms / 1000) / statistics.median(loaded["mock"].streams_s)
    return [
        f"# The guard proxy against the mock straight ({platform.python_version()},"
        f" {os.cpu_count()} cores: the client, the mock and the server measured share them)",
        "",
        "| measurement | straight from the mock | through the proxy |",
        "|---|---:|---:|",
        f"| one at a time, p50 / p99 time to first content ms ({args.requests} each) |"
        f" {low_p50['mock']:.2f} / {ms(ttfds(low['mock']), 99):.2f} |"
        f" {low_p50['proxy']:.2f} / {ms(ttfds(low['proxy']), 99):.2f} |",
        f"| paced stream, medians of {PACED_STREAMS}: reads carrying text, last text at ms |"
        f" {counts['mock']:.0f}, {last['mock']:.1f} | {counts['proxy']:.0f}, {last['proxy']:.1f} |",
        "",
        f"{n} concurrent streams of the `clean` flow, medians of {args.rounds} rounds, the"
        " servers alternated round by round; CPU is the server's own (all its processes):",
        "",
        "| server | streams/s | chunks/s | chunks/s against the mock's |"
        " p50 / p99 time to first content ms | server CPU per stream ms | failed |",
        "|---|---:|---:|---:|---:|---:|---:|",
        loaded["mock"].row("mock, straight", loaded["mock"], n),
        loaded["proxy"].row("guard proxy, 1 worker (filter on)", loaded["mock"], n),
        loaded["proxy x2"].row("guard proxy, 2 workers (filter on)", loaded["mock"], n),
        loaded["litellm"].row("LiteLLM proxy, no guardrail", loaded["mock"], n),
        "",
        f"The ceiling on this machine, estimated from the same rounds: a proxy costing the least"
        f" a proxy can, one more server and one more client per stream ({mock_ms:.2f} +"
        f" {client_ms:.2f} ms of CPU), beside the client and the mock on {cores} cores, would"
        f" reach {cores} / (2 x {least_ms:.2f} ms) = {cores / (2 * least_ms / 1000):.0f} streams/s,"
        f" {min(ceiling, 1.0):.2f}x the mock's.",
        "",
        verdict(not unanswered, f"every stream answered 200 ({unanswered} did not)"),
        verdict(
            added <= ADDED_TTFT_TARGET_MS,
            f"the proxy adds {added:.2f} ms to the p50 time to first content"
            f" (<= {ADDED_TTFT_TARGET_MS:.0f} ms)",
        ),
        verdict(
            counts["proxy"] >= PACED_READS_SHARE * counts["mock"]
            and last["proxy"] - last["mock"] <= PACED_END_SLACK_MS,
            f"a paced stream is not buffered: {counts['proxy']:.0f} reads with text through the"
            f" proxy against {counts['mock']:.0f} straight, the last"
            f" {last['proxy'] - last['mock']:+.1f} ms apart (medians)",
        ),
        verdict(
            best >= THROUGHPUT_SHARE * rate["mock"],
            f"through the proxy {best / rate['mock']:.2f}x the mock's chunks/s at {n} concurrent"
            f" streams, its better worker count (>= {THROUGHPUT_SHARE}x)",
        ),
        verdict(
            rate["proxy"] > rate["litellm"] and not lost,
            f"ours faster than LiteLLM: one worker with the filter on {rate['proxy']:.0f}"
            f" chunks/s, LiteLLM's proxy passing the streams on {rate['litellm']:.0f}"
            + (f" (but {lost} of LiteLLM's streams failed: no comparison)" if lost else ""),
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100, help="one-at-a-time streams each")
    parser.add_argument("--streams", type=int, default=200, help="concurrent streams (200)")
    parser.add_argument("--rounds", type=int, default=5, help="concurrent rounds each (5)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument(
        "--cost-only", action="store_true", help="only what a chunk costs against nginx"
    )
    args = parser.parse_args(argv)
    return report(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
