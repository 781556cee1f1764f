"""The notes chat under load: 200 concurrent turns through the app against the mock.

The mock and the app (pointed at it, with a fresh data folder) run as subprocesses on free
loopback ports (benchmarks/servers.py), driven by the light client of benchmarks/turns.py:
a warm-up, turns one at a time, `--rounds` rounds of N concurrent clean turns next to the
same streams straight from the mock, a round of mixed turns, then `--rounds` rounds of N
clean turns against the embedded demo (`python -m app` with no model configured: its mock
in the app's process, the CPU of both counted), then the checks (one right terminal frame
per turn, one query-log row per `done`, no "database is locked", threads, descriptors and
memory back to the baseline). The phases, the targets and every run:
docs/benchmarks.md, "The app under load".

Reproduce: `uv run python benchmarks/load.py` (`--help` for the options).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from baseline import Figure, beside, path_of, read_baseline, write_baseline
from servers import RunningServer, ServerSpec, mock_llm_spec, module_spec, serving
from turns import (
    QUESTION,
    Keys,
    Round,
    Turn,
    chat_streams,
    measured,
    ms,
    post_request,
    stream_one,
    ttfds,
    write_paced_flows,
)
from verdicts import report, verdict

CPU_TARGET_MS = 3.0
RATE_TARGET = 140.0
P99_TARGET_MS = 1000.0
LOW_LOAD_GAP_MS = 5.0
LOW_LOAD_TURNS = 40
MEMORY_SLACK = 0.10
MIXED = ("clean", "tool-then-answer", "scaffold-recover", "paced")


# --- the client ------------------------------------------------------------------------------


async def app_turns(app: RunningServer, flows: Sequence[str], keys: Keys) -> list[Turn]:
    requests = [
        post_request(app.port, "/api/chat", {"message": f"{QUESTION} {keys.trigger(f)}"})
        for f in flows
    ]
    return await asyncio.gather(*(stream_one(app.port, r, b'"type":"delta"') for r in requests))


# --- measuring -------------------------------------------------------------------------------


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


def app_spec(mock: RunningServer | None, data: Path, port: int) -> ServerSpec:
    """`python -m app` pointed at `mock`; with None, the embedded demo: its mock in the app's
    process (the check issue 45 measured: the mock's CPU counts with the app's)."""
    env = {k: v for k, v in os.environ.items() if k != "SG_LLM_BASE_URL"}
    env |= {"SG_DATA_DIR": str(data), "SG_LLM_TIMEOUT_S": "120"}
    if mock is not None:
        env["SG_LLM_BASE_URL"] = f"{mock.base_url}/v1"
    return module_spec("app", port, env=env)


async def embedded_rounds(folder: Path, n: int, rounds: int, keys: Keys) -> list[Round]:
    """A warm-up, then `rounds` rounds of `n` concurrent clean turns against the embedded
    demo in a data folder of its own."""
    async with serving(lambda port: app_spec(None, folder / "embedded-data", port), folder) as app:
        await app_turns(app, ["clean"] * n, keys)
        return [await measured(app, app_turns(app, ["clean"] * n, keys)) for _ in range(rounds)]


async def run(args: argparse.Namespace) -> list[str]:
    n, keys = args.turns, Keys()
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sg-load-") as tmp:
        folder = Path(tmp)
        flows = write_paced_flows(folder)
        async with (
            serving(lambda port: mock_llm_spec(flows, port), folder) as mock,
            serving(lambda port: app_spec(mock, folder / "data", port), folder) as app,
        ):
            await app_turns(app, ["clean"] * n, keys)  # warm-up
            base = resources(app.proc.pid)

            low_app = [(await app_turns(app, ["clean"], keys))[0] for _ in range(LOW_LOAD_TURNS)]
            low_mock = [
                (await chat_streams(mock, "clean", 1, keys))[0] for _ in range(LOW_LOAD_TURNS)
            ]

            clean = [
                await measured(app, app_turns(app, ["clean"] * n, keys)) for _ in range(args.rounds)
            ]
            direct = [
                await measured(mock, chat_streams(mock, "clean", n, keys))
                for _ in range(args.rounds)
            ]
            mix = [MIXED[i % len(MIXED)] for i in range(n)]
            mixed = await measured(app, app_turns(app, mix, keys))

            await asyncio.sleep(args.settle_s)  # idle worker threads and sockets wind down
            after = resources(app.proc.pid)
            log_text = app.log_path.read_text(encoding="utf-8", errors="replace")
            log_text += (folder / "data" / "chat.log").read_text(encoding="utf-8", errors="replace")
        rows = _rows(folder / "data")
        embedded = await embedded_rounds(folder, n, args.rounds, keys)

    all_clean = [t for r in clean for t in r.turns]
    problems, done = terminal_problems(all_clean, ["clean"] * len(all_clean))
    mixed_problems, mixed_done = terminal_problems(mixed.turns, mix)
    problems += mixed_problems
    all_embedded = [t for r in embedded for t in r.turns]
    problems += terminal_problems(all_embedded, ["embedded clean"] * len(all_embedded))[0]
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
    t_embedded = ttfds(all_embedded)
    embedded_rate = statistics.median(len(r.turns) / r.wall_s for r in embedded)
    embedded_cpu_ms = sum(r.server_cpu_s for r in embedded) / len(all_embedded) * 1000

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
        f"| app with its embedded mock (one process), clean, {n} concurrent |"
        f" {len(all_embedded)} | {embedded_rate:.0f} | {ms(t_embedded, 50):.0f} |"
        f" {ms(t_embedded, 99):.0f} | {embedded_cpu_ms:.2f} (mock's included) | |",
        f"| app, clean, one at a time | {LOW_LOAD_TURNS} | | {low_app_p50:.1f} | | | |",
        f"| mock direct, one at a time | {LOW_LOAD_TURNS} | | {low_mock_p50:.1f} | | | |",
        "",
        f"resources after warm-up: {base}; after the run (+{args.settle_s:.0f} s idle): {after}",
        f"query-log rows {rows}, expected {expected_rows} (one per done frame)",
        "",
    ]
    figures = [
        Figure(f"clean turns/s, {n} concurrent", rate, "/s", "higher"),
        Figure("app CPU per clean turn", app_cpu_ms, "ms", "lower"),
        # The machine's speed drifts by half between minutes, the mock's with it: the app's
        # CPU per turn in units of the mock's CPU per stream, from the same run, does not.
        Figure(
            "app CPU per clean turn over the mock's per stream",
            app_cpu_ms / mock_cpu_ms,
            "x",
            "lower",
        ),
        Figure("p99 time to first delta", ms(t_clean, 99), "ms", "lower"),
        Figure(f"mixed turns/s, {n} concurrent", len(mixed.turns) / mixed.wall_s, "/s", "higher"),
        Figure("low-load first-delta gap to the mock", low_app_p50 - low_mock_p50, "ms", "lower"),
        Figure(
            "embedded demo CPU per clean turn, its mock's included", embedded_cpu_ms, "ms", "lower"
        ),
    ]
    baseline = read_baseline(path_of("load"))
    out += [*beside(figures, baseline), ""]
    if args.write_baseline:
        written = write_baseline(path_of("load"), figures)
        out += [f"wrote {path_of('load')} ({written.recorded}, {written.commit})", ""]
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
    parser.add_argument(
        "--write-baseline",
        action="store_true",
        help="record this run's figures as the last release's (benchmarks/baselines/load.json)",
    )
    args = parser.parse_args(argv)
    return report(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    sys.exit(main())
