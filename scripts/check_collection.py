"""Fail when two collections of the same test tree give different test ids.

A test id must never depend on the clock, randomness, hash order or the machine: xdist's
workers refuse to run when their collections disagree, and a moving id cannot be followed
between runs. This collects every suite twice, in fresh interpreters with a different
PYTHONHASHSEED, a later wall-clock second (it waits for the tick, not a fixed time) and a
different TZ, and compares the ids. Exits 0 when identical, 1 with the difference, 2 when
collecting fails.

Usage: uv run python scripts/check_collection.py [SUITE ...]   (default: every suite)
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("tests/unit", "tests/integration", "tests/e2e", "tests/conformance_selftest",
          "conformance")  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """What one collection's interpreter is given."""

    hash_seed: str
    tz: str

    def describe(self) -> str:
        return f"PYTHONHASHSEED={self.hash_seed} TZ={self.tz}"


VARIANTS = (Variant("1", "UTC0"), Variant("2", "XST-5:45"))  # UTC, then UTC+05:45


def id_diff(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """The unified diff between two collections' test ids; empty when they are identical.

    Order counts: xdist hands tests out by their index in the collection, so the same ids in
    another order are a different collection too.
    """
    if list(first) == list(second):
        return []
    return list(
        difflib.unified_diff(
            list(first), list(second), "first collection", "second collection", lineterm=""
        )
    )


def parse_ids(output: str) -> list[str]:
    """The test ids in `pytest --collect-only -q` output (one `path::name[params]` a line)."""
    ids: list[str] = []
    for line in output.splitlines():
        if not line.strip():
            break  # the blank line before "N tests collected"
        if "::" in line:
            ids.append(line)
    return ids


class CollectionFailed(Exception):
    pass


def collect(variant: Variant, suites: Sequence[str]) -> list[str]:
    env = os.environ | {"PYTHONHASHSEED": variant.hash_seed, "TZ": variant.tz}
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, *suites], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise CollectionFailed(
            f"collecting with {variant.describe()} failed (exit {done.returncode}):\n"
            f"{done.stdout}{done.stderr}"
        )
    return parse_ids(done.stdout)


def wait_for_next_second(after: float) -> None:
    """Return once the wall clock reads a later whole second than `after`."""
    while int(time.time()) <= int(after):
        time.sleep(0.01)


def main(argv: Sequence[str]) -> int:
    suites = list(argv) or list(SUITES)
    try:
        first = collect(VARIANTS[0], suites)
        first_ended = time.time()
        wait_for_next_second(first_ended)
        second = collect(VARIANTS[1], suites)
    except CollectionFailed as failure:
        print(f"collection FAILED: {failure}", file=sys.stderr)
        return 2
    variants = " vs ".join(v.describe() for v in VARIANTS)
    diff = id_diff(first, second)
    if diff:
        print("\n".join(diff))
        print(
            f"collection UNSTABLE: {len(first):,} vs {len(second):,} test ids, "
            f"{sum(line[:1] in '+-' for line in diff[2:]):,} differing lines ({variants}); "
            "a test id depends on the clock, randomness or hash order"
        )
        return 1
    if not first:
        print("collection FAILED: no test ids collected", file=sys.stderr)
        return 2
    print(
        f"collection stable: {len(first):,} test ids, identical across 2 collections "
        f"({variants}, a clock second apart)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
