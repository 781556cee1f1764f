"""The guard's added latency per token on a real model's stream, beside the model's own.

llama.cpp's llama-server serves SmolLM2-135M-Instruct (the cached build of
tests/thirdparty/llama_build.py; without it this prints the one command that makes it and
exits 2), greedy from a fixed seed. A byte tap in this process sits right in front of the
server and notes when each of its reads arrived; the client reads the same answer either
through the tap alone (the baseline, in the same run) or through `python -m guard` (a
subprocess) and the tap. For each SSE event, the delay from the tap's arrival to the
client's read is that route's latency; the guard's added latency per token is the guarded
route's minus the baseline's, p50 and p99 over every token of every round, beside the
model's own time per token (the gaps between its events at the tap). Rounds alternate the
two routes.

    uv run python benchmarks/real_model.py [--rounds 6] [--tokens 128]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from servers import REPO_ROOT, RunningServer, ServerSpec, guard_spec, serving
from turns import Turn, ms, post_request, stream_one
from verdicts import report, verdict

sys.path.insert(0, str(REPO_ROOT))

from tests.thirdparty.byte_tap import Tap, tapping
from tests.thirdparty.llama_build import LLAMA_SERVER, BuildMissing
from tests.thirdparty.llama_server import SERVER_ARGS

ADDED_P50_TARGET_MS = 1.0
"""The guard's added latency per token at the median, at most (a token takes ~12 ms here)."""
QUESTION = "Write a short story about a lighthouse keeper and her cat."


def llama_spec(port: int) -> ServerSpec:
    build = LLAMA_SERVER.require()
    argv = [str(build.server), "--model", str(build.model), *SERVER_ARGS, "--port", str(port)]
    return ServerSpec("llama-server", argv, {}, REPO_ROOT, "/health")


def event_ends(body: bytes, start: int = 0) -> list[int]:
    """Where each complete SSE event of `body` from `start` ends (past its blank line)."""
    ends, at = [], body.find(b"\n\n", start)
    while at >= 0:
        ends.append(at + 2)
        at = body.find(b"\n\n", at + 2)
    return ends


def when(offset: int, arrivals: list[tuple[float, int]]) -> float:
    """When the read that brought byte `offset` arrived."""
    return next(t for t, upto in arrivals if upto >= offset)


def sizes(tap: Tap) -> list[int]:
    """How many bytes each connection has brought from the server so far."""
    return [len(body) for body, _ in tap.upstream_reads()]


def upstream_times(tap: Tap, before: list[int]) -> list[float]:
    """When each SSE event the server sent since `before` (sizes()) came, at the tap: the
    one connection that grew (a pooled one, or a new one)."""
    grown = [(body, arrivals, before[i] if i < len(before) else 0)
             for i, (body, arrivals) in enumerate(tap.upstream_reads())
             if len(body) > (before[i] if i < len(before) else 0)]  # fmt: skip
    if len(grown) != 1:
        raise RuntimeError(f"{len(grown)} connections carried the answer, not one")
    body, arrivals, start = grown[0]
    return [when(end, arrivals) for end in event_ends(body, start)]


def client_times(turn: Turn) -> list[float]:
    body, times, size = b"", [], 0
    for piece, at in zip(turn.body, turn.reads, strict=True):
        size += len(piece)
        body += piece
        times.append((at, size))
    return [when(end, times) for end in event_ends(body)]


async def one_turn(port: int, tap: Tap, tokens: int) -> tuple[list[float], list[float]]:
    """Per event: its latency from the tap to the client; and the model's gaps."""
    body = {"model": "smollm2", "messages": [{"role": "user", "content": QUESTION}],
            "stream": True, "temperature": 0, "seed": 42, "max_tokens": tokens}  # fmt: skip
    before = sizes(tap)
    turn = await stream_one(port, post_request(port, "/v1/chat/completions", body), b"content")
    if turn.error is not None or turn.status != 200:
        raise RuntimeError(f"a turn failed: {turn.status} {turn.error}")
    upstream, client = upstream_times(tap, before), client_times(turn)
    if len(upstream) != len(client):
        raise RuntimeError(f"{len(upstream)} events from the server, {len(client)} read")
    latency = [(c - u) * 1000 for u, c in zip(upstream, client, strict=True)]
    between = upstream[1:-1]  # the tokens: after the role event, before the finish and [DONE]
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(between)]
    return latency, gaps


async def run(rounds: int, tokens: int, log_dir: Path) -> list[str]:
    async with serving(llama_spec, log_dir) as llama:
        with tapping(llama.port) as tap:
            tapped = RunningServer(llama.spec, llama.proc, tap.port, llama.log_path)

            def guarded_spec(port: int) -> ServerSpec:
                # the guard passes other paths through: ready when the server's /health is
                return replace(guard_spec(tapped, port), ready_path="/health")

            async with serving(guarded_spec, log_dir) as guard:
                await one_turn(guard.port, tap, 8)  # warm both routes
                await one_turn(tap.port, tap, 8)
                baseline: list[float] = []
                guarded: list[float] = []
                gaps: list[float] = []
                for _ in range(rounds):
                    latency, model = await one_turn(tap.port, tap, tokens)
                    baseline += latency
                    gaps += model
                    latency, model = await one_turn(guard.port, tap, tokens)
                    guarded += latency
                    gaps += model
    added = [ms(guarded, p) - ms(baseline, p) for p in (50, 99)]
    return [
        f"llama-server + SmolLM2-135M, {rounds} rounds of {tokens} tokens per route",
        "| route | latency per token p50 | p99 |",
        "| --- | --- | --- |",
        f"| tap only (baseline) | {ms(baseline, 50):.3f} ms | {ms(baseline, 99):.3f} ms |",
        f"| through the guard | {ms(guarded, 50):.3f} ms | {ms(guarded, 99):.3f} ms |",
        f"| the model's own time per token | {statistics.median(gaps):.2f} ms (median gap)"
        f" | {ms(gaps, 99):.2f} ms |",
        verdict(
            added[0] <= ADDED_P50_TARGET_MS,
            f"the guard adds {added[0]:.3f} ms per token at p50 ({added[1]:.3f} ms at p99),"
            f" {100 * added[0] / statistics.median(gaps):.1f}% of the model's own time per"
            f" token (target <= {ADDED_P50_TARGET_MS} ms)",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The guard's latency on a real model.")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        LLAMA_SERVER.require()
    except BuildMissing as exc:
        print(f"real_model: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sg-bench-real-") as scratch:
        lines = asyncio.run(run(args.rounds, args.tokens, Path(scratch)))
    return report(lines, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
