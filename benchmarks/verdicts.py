"""How every benchmark states its targets: PASS/FAIL lines, and an exit status from them.

A benchmark prints its table and one verdict line per target; it exits 1 when any line is
a FAIL, so a benchmark can gate a change, and 0 otherwise (a NO VERDICT line, which says
the measurement could not judge the target, does not fail the run).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

PASS = "PASS"
FAIL = "FAIL"


def verdict(ok: bool, text: str) -> str:
    return f"{PASS if ok else FAIL}: {text}"


def exit_status(lines: Iterable[str]) -> int:
    """1 if any line is a FAIL verdict, else 0."""
    return 1 if any(line.startswith(f"{FAIL}:") for line in lines) else 0


def report(lines: Sequence[str], out: Path | None) -> int:
    """Print the report (and write it to `out` when given); the exit status it calls for."""
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if out is not None:
        out.write_text(text, encoding="utf-8")
    return exit_status(lines)
