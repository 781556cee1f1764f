"""Known failures (`--expected-failures FILE`): which clause, or which flow of a clause, may fail.

One entry per line, `CLAUSE` or `CLAUSE:FLOW`; `#` starts a comment. The plugin turns a
covered test into a strict xfail, so a covered failure is expected and a covered test that
passes fails the run as a stale baseline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from conformance.oracle.clauses import BY_ID, CLAUSES

_LINE = re.compile(r"^(?P<clause>[A-Z][A-Z0-9]*)(?::(?P<flow>[A-Za-z0-9_-]+))?$")


class BaselineError(ValueError):
    """The baseline file is unreadable or has a line that is not a known clause."""


@dataclass(frozen=True)
class Baseline:
    entries: frozenset[tuple[str, str | None]] = frozenset()

    def covers(self, clause: str, flow: str | None) -> bool:
        return (clause, None) in self.entries or (clause, flow) in self.entries


def load_baseline(path: Path) -> Baseline:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read {path}: {exc}") from exc
    entries: set[tuple[str, str | None]] = set()
    for number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _LINE.match(line)
        if match is None or match["clause"] not in BY_ID:
            known = ", ".join(c.id for c in CLAUSES)
            raise BaselineError(
                f"{path}:{number}: {line!r} is not CLAUSE or CLAUSE:FLOW with a known clause"
                f" ({known})"
            )
        entries.add((match["clause"], match["flow"]))
    return Baseline(frozenset(entries))
