"""The clause-by-result table (`--conformance-report FILE.md`), written once by the controller."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from conformance.clauses import CLAUSES
from conformance.profile import Profile

ORDER = ("passed", "failed", "not judged", "stale baseline", "expected failure", "skipped")


def clause_verdict(outcomes: list[str]) -> str:
    """One word for a clause: any failure fails it; else a test whose turn could not be
    played leaves it not judged; all skipped skips it."""
    if not outcomes:
        return "not run"
    counts = Counter(outcomes)
    for word in ("failed", "not judged", "stale baseline", "expected failure"):
        if counts[word]:
            return word
    return "skipped" if counts["skipped"] == len(outcomes) else "passed"


def render(rows: dict[str, list[str]], target: str | None, profile: Profile) -> str:
    lines = [
        "# Guardrail conformance report",
        "",
        f"Target: {target or 'the reference app (started by the kit)'}",
        f"Profile: {profile.name} ({profile.source})",
        "",
        "| clause | what it demands | verdict | tests |",
        "| --- | --- | --- | --- |",
    ]
    for clause in CLAUSES:
        outcomes = rows.get(clause.id, [])
        if clause.on_request and not outcomes:
            continue
        counts = Counter(outcomes)
        detail = ", ".join(f"{counts[w]} {w}" for w in ORDER if counts[w]) or "none"
        title = clause.title.replace("|", "\\|")
        lines.append(f"| {clause.id} | {title} | {clause_verdict(outcomes)} | {detail} |")
    return "\n".join(lines) + "\n"


def write_report(
    path: Path, rows: dict[str, list[str]], *, target: str | None, profile: Profile
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(rows, target, profile), encoding="utf-8")
