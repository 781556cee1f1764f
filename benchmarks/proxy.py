"""The guard proxy's cost: the same streams from the mock, straight and through the proxy.

The mock and the proxy run as subprocesses on loopback; benchmarks/load.py's light client
plays the same flow straight and through the proxy, alternated in one run: time to first
content one at a time, concurrent streams/s and the proxy's CPU, and paced streams' reads
(a proxy that buffered would deliver fewer, later reads). A missed target
(docs/benchmarks.md) prints FAIL and exits 1.

    uv run python benchmarks/proxy.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from servers import guard_spec, mock_llm_spec, serving
from turns import CONTENT, Keys, Turn, chat_streams, measured, ms, ttfds, write_paced_flows
from verdicts import report, verdict

ADDED_TTFT_TARGET_MS = 5.0
PACED_READS_SHARE = 0.9
PACED_END_SLACK_MS = 5.0
PACED_STREAMS = 5


def text_reads(turn: Turn) -> list[float]:
    """When each read that carried answer text arrived, in ms from the request."""
    return [
        (at - turn.sent) * 1000
        for at, piece in zip(turn.reads, turn.body, strict=True)
        if CONTENT in piece and b'"content":""' not in piece
    ]


async def run(args: argparse.Namespace) -> list[str]:
    keys = Keys()
    with tempfile.TemporaryDirectory(prefix="sg-proxy-") as tmp:
        folder = Path(tmp)
        flows = write_paced_flows(folder)
        async with (
            serving(lambda port: mock_llm_spec(flows, port), folder) as mock,
            serving(lambda port: guard_spec(mock, port), folder) as proxy,
        ):
            await chat_streams(proxy, "clean", args.streams, keys)  # warm-up: pools fill
            low: dict[str, list[Turn]] = {"mock": [], "proxy": []}
            for _ in range(args.requests):
                low["mock"] += await chat_streams(mock, "clean", 1, keys)
                low["proxy"] += await chat_streams(proxy, "clean", 1, keys)
            loaded: dict[str, list[float]] = {"mock": [], "proxy": []}
            rates: dict[str, list[float]] = {"mock": [], "proxy": []}
            proxy_cpu = 0.0
            for _ in range(args.rounds):
                for name, server in (("mock", mock), ("proxy", proxy)):
                    done = await measured(server, chat_streams(server, "clean", args.streams, keys))
                    loaded[name] += ttfds(done.turns)
                    rates[name].append(len(done.turns) / done.wall_s)
                    if name == "proxy":
                        proxy_cpu += done.server_cpu_s
            paced: dict[str, list[Turn]] = {"mock": [], "proxy": []}
            for _ in range(PACED_STREAMS):
                paced["mock"] += await chat_streams(mock, "paced", 1, keys)
                paced["proxy"] += await chat_streams(proxy, "paced", 1, keys)

    failed = [t for turns in low.values() for t in turns if t.error or t.status != 200]
    low_p50 = {name: ms(ttfds(turns), 50) for name, turns in low.items()}
    added = low_p50["proxy"] - low_p50["mock"]
    counts = {
        name: statistics.median(len(text_reads(t)) for t in turns) for name, turns in paced.items()
    }
    last = {
        name: statistics.median(max(text_reads(t), default=0.0) for t in turns)
        for name, turns in paced.items()
    }
    n = args.streams
    return [
        f"# The guard proxy against the mock straight ({platform.python_version()},"
        f" {os.cpu_count()} cores)",
        "",
        "| measurement | straight from the mock | through the proxy |",
        "|---|---:|---:|",
        f"| one at a time, p50 / p99 time to first content ms ({args.requests} each) |"
        f" {low_p50['mock']:.2f} / {ms(ttfds(low['mock']), 99):.2f} |"
        f" {low_p50['proxy']:.2f} / {ms(ttfds(low['proxy']), 99):.2f} |",
        f"| {n} concurrent, streams/s (median of {args.rounds} rounds) |"
        f" {statistics.median(rates['mock']):.0f} | {statistics.median(rates['proxy']):.0f} |",
        f"| {n} concurrent, p50 / p99 time to first content ms |"
        f" {ms(loaded['mock'], 50):.0f} / {ms(loaded['mock'], 99):.0f} |"
        f" {ms(loaded['proxy'], 50):.0f} / {ms(loaded['proxy'], 99):.0f} |",
        f"| proxy CPU per stream ms | | {proxy_cpu / (n * args.rounds) * 1000:.2f} |",
        f"| paced stream, medians of {PACED_STREAMS}: reads carrying text, last text at ms |"
        f" {counts['mock']:.0f}, {last['mock']:.1f} | {counts['proxy']:.0f}, {last['proxy']:.1f} |",
        "",
        verdict(not failed, f"every stream answered 200 ({len(failed)} did not)"),
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
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100, help="one-at-a-time streams each")
    parser.add_argument("--streams", type=int, default=100, help="concurrent streams (100)")
    parser.add_argument("--rounds", type=int, default=3, help="concurrent rounds each (3)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    return report(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
