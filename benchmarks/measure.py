"""How the benchmarks measure: a process group's CPU time, a nearest-rank percentile."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path


def group_members(pgid: int) -> dict[int, list[str]]:
    """The live members of a process group: each pid's `/proc/PID/stat` fields (after the
    command name)."""
    members: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid:
            members[int(entry.name)] = fields
    return members


def group_stats(pgid: int) -> list[list[str]]:
    """`/proc/PID/stat` fields (after the command name) of the live members of a group."""
    return list(group_members(pgid).values())


def group_cpu_seconds(pgid: int) -> float:
    """User+system CPU seconds of the live processes in one process group (Linux /proc)."""
    ticks = sum(int(fields[11]) + int(fields[12]) for fields in group_stats(pgid))
    return ticks / os.sysconf("SC_CLK_TCK")


def group_rss(pgid: int) -> int:
    """Resident memory (VmRSS) of the live processes in one process group, in bytes."""
    total = 0
    for pid in group_members(pgid):
        try:
            total += memory(pid).get("VmRSS", 0)
        except OSError:
            continue  # it exited meanwhile
    return total


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending sequence (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in bytes."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


def reset_peak(pid: int) -> None:
    """VmHWM back to the current RSS (Linux: `5` to clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
