"""The clause-by-result report (`--conformance-report FILE.md`), written once by the
controller: the markdown table, and beside it FILE.html with each failure's evidence
(conformance/report/html_page.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from conformance.oracle.clauses import CLAUSES
from conformance.profiles.model import Profile
from conformance.report.evidence import folder_name
from conformance.report.html_page import Failure, read_evidence, render_html

ORDER = ("passed", "failed", "not judged", "stale baseline", "expected failure", "skipped")
Row = tuple[str, str, str, str]
"""A clause table row: the clause, what it demands, its verdict, its tests' outcomes."""


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


def clause_table(rows: dict[str, list[str]]) -> list[Row]:
    """Every clause that ran or always runs, with its verdict and its tests' outcomes."""
    table: list[Row] = []
    for clause in CLAUSES:
        outcomes = rows.get(clause.id, [])
        if clause.on_request and not outcomes:
            continue
        counts = Counter(outcomes)
        detail = ", ".join(f"{counts[w]} {w}" for w in ORDER if counts[w]) or "none"
        table.append((clause.id, clause.title, clause_verdict(outcomes), detail))
    return table


def header(target: str | None, profile: Profile) -> list[str]:
    return [
        f"Target: {target or 'the reference app (started by the kit)'}",
        f"Profile: {profile.name} ({profile.source})",
    ]


def render(rows: dict[str, list[str]], target: str | None, profile: Profile) -> str:
    lines = [
        "# Guardrail conformance report",
        "",
        *header(target, profile),
        "",
        "| clause | what it demands | verdict | tests |",
        "| --- | --- | --- | --- |",
    ]
    for clause, title, verdict, detail in clause_table(rows):
        lines.append(f"| {clause} | {title.replace('|', chr(92) + '|')} | {verdict} | {detail} |")
    return "\n".join(lines) + "\n"


def write_report(
    path: Path,
    rows: dict[str, list[str]],
    *,
    target: str | None,
    profile: Profile,
    failures: Sequence[Failure] = (),
    artifacts: Path | None = None,
) -> None:
    """The markdown report and the HTML one beside it (`path` with `.md` and with `.html`;
    any other suffix is kept for the markdown), each failure with the evidence it left
    under `artifacts`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    markdown = path.with_suffix(".md") if path.suffix == ".html" else path
    markdown.write_text(render(rows, target, profile), encoding="utf-8")
    found = [
        read_evidence(f, artifacts, folder_name(f.nodeid)) if artifacts is not None else f
        for f in failures
    ]
    page = render_html(clause_table(rows), found, header(target, profile), path.parent.resolve())
    path.with_suffix(".html").write_text(page, encoding="utf-8")
