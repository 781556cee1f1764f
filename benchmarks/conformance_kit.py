"""Wall time of the whole conformance kit against the reference app, with -n 2 and serially.

Runs `python -m pytest conformance -n 2` in a fresh interpreter, as a user does, alternated
with the same kit under `-p no:xdist` (the baseline: what the second worker buys), each
`--repeat` times. The target is a report, not a test (docs/benchmarks.md); a run with a
failing test is reported with its last lines and exits 1, like a missed target.

Usage: uv run python benchmarks/conformance_kit.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from verdicts import exit_status, verdict

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 60.0
RUN_DEADLINE_S = 600.0  # a hang guard for one run, not a timing claim
CONFIGURATIONS = {"-n 2": ["-n", "2"], "serial (baseline)": ["-p", "no:xdist"]}


@dataclass(frozen=True)
class Run:
    seconds: float
    ok: bool
    tail: str


def run_kit(extra: list[str]) -> Run:
    command = [sys.executable, "-m", "pytest", "conformance", "-q", "-p", "no:cacheprovider"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [*command, *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_S,
        check=False,
    )
    seconds = time.perf_counter() - started
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
    return Run(seconds, done.returncode == 0, tail)


def main() -> int:
    parser = argparse.ArgumentParser(description="Wall time of the whole conformance kit.")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration")
    args = parser.parse_args()

    runs: dict[str, list[Run]] = {name: [] for name in CONFIGURATIONS}
    for _ in range(args.repeat):
        for name, extra in CONFIGURATIONS.items():
            runs[name].append(run_kit(extra))

    print(f"conformance kit against the reference app, {os.cpu_count()} CPUs")
    print(f"{'configuration':<20} {'median s':>9}  runs (s)")
    for name, results in runs.items():
        median = statistics.median(r.seconds for r in results)
        each = ", ".join(f"{r.seconds:.1f}{'' if r.ok else ' FAILED'}" for r in results)
        print(f"{name:<20} {median:>9.1f}  {each}")
    lines: list[str] = []
    fast = statistics.median(r.seconds for r in runs["-n 2"])
    base = statistics.median(r.seconds for r in runs["serial (baseline)"])
    lines.append(f"-n 2 is {base / fast:.2f}x the serial kit's speed")
    lines.append(
        verdict(fast < TARGET_S, f"the whole kit with -n 2: median {fast:.1f} s (target < 60 s)")
    )
    failures = [r for results in runs.values() for r in results if not r.ok]
    lines.append(verdict(not failures, f"every run passed every test ({len(failures)} failed)"))
    for failure in failures:
        print(f"--- a failed run:\n{failure.tail}")
    print("\n".join(lines))
    return exit_status(lines)


if __name__ == "__main__":
    sys.exit(main())
