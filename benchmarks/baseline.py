"""The last release's figures beside today's: one small committed file per benchmark.

A benchmark hands its headline figures to `beside()`, which prints them next to the ones in
benchmarks/baselines/<benchmark>.json with the change and whether it is for the better. The
file is refreshed on purpose, at a release (`--write-baseline` on the benchmark), never by a
test, so a regression shows in the table the day it lands.

Deliberate choice: a baseline measured on another machine is still printed, with the machine
it was measured on; the figures of one 2-core machine vary by half between hours
(docs/benchmarks.md), so the change column is a pointer to look, never a verdict. The
targets are the verdicts.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

BASELINES = Path(__file__).resolve().parent / "baselines"


class BaselineError(ValueError):
    """A baseline file that cannot be read: the message names it and what is wrong."""


@dataclass(frozen=True)
class Figure:
    """One headline figure of a run."""

    name: str
    value: float
    unit: str
    better: Literal["higher", "lower"]


@dataclass(frozen=True)
class Baseline:
    """The figures a benchmark recorded at a release, and where."""

    recorded: str  # ISO date
    commit: str
    machine: str
    figures: dict[str, float]


def path_of(benchmark: str) -> Path:
    return BASELINES / f"{benchmark}.json"


def read_baseline(path: Path) -> Baseline | None:
    """The baseline in `path`; None when there is none yet."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise BaselineError(f"{path}: not a JSON object")
    fields = {key: data.get(key) for key in ("recorded", "commit", "machine", "figures")}
    texts = [fields["recorded"], fields["commit"], fields["machine"]]
    figures = fields["figures"]
    if not all(isinstance(text, str) for text in texts) or not isinstance(figures, dict):
        raise BaselineError(
            f"{path}: needs strings recorded, commit, machine and an object figures"
        )
    values: dict[str, float] = {}
    for name, value in figures.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BaselineError(f"{path}: figure {name!r} is not a number: {value!r}")
        values[str(name)] = float(value)
    recorded, commit, machine = (str(text) for text in texts)
    return Baseline(recorded, commit, machine, values)


def this_machine() -> str:
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} CPUs, {system}, Python {platform.python_version()}"


def head_commit() -> str:
    """The checkout's commit ('unknown' outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=BASELINES.parent, capture_output=True,
            text=True, check=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def write_baseline(path: Path, figures: Sequence[Figure]) -> Baseline:
    """Record `figures` as the baseline, with today's date, the commit and this machine."""
    baseline = Baseline(
        recorded=datetime.date.today().isoformat(),
        commit=head_commit(),
        machine=this_machine(),
        figures={figure.name: figure.value for figure in figures},
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dataclasses.asdict(baseline), indent=2) + "\n", encoding="utf-8")
    return baseline


def change(now: float, then: float, better: Literal["higher", "lower"]) -> str:
    """The change from `then` to `now`, and whether it is for the better. Pure."""
    if then == 0:
        return "n/a"
    ratio = now / then - 1
    if abs(ratio) < 0.005:
        return "same"
    good = (ratio > 0) == (better == "higher")
    return f"{ratio:+.0%} ({'better' if good else 'worse'})"


def beside(figures: Sequence[Figure], baseline: Baseline | None) -> list[str]:
    """A markdown table of today's figures beside the baseline's. Pure."""
    if baseline is None:
        head = "no baseline yet (write one with --write-baseline)"
    else:
        head = f"baseline: {baseline.recorded}, {baseline.commit}, {baseline.machine}"
    lines = [
        f"Today beside the last release ({head}):",
        "",
        "| figure | baseline | today | change |",
        "|---|---:|---:|---|",
    ]
    for figure in figures:
        then = None if baseline is None else baseline.figures.get(figure.name)
        old = "n/a" if then is None else f"{then:,.2f} {figure.unit}"
        moved = "n/a" if then is None else change(figure.value, then, figure.better)
        lines.append(
            f"| {figure.name} ({figure.better} is better) | {old}"
            f" | {figure.value:,.2f} {figure.unit} | {moved} |"
        )
    return lines
