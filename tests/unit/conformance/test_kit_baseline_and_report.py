"""The kit's known-failures file and its clause-by-result report."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.oracle.baseline import Baseline, BaselineError, load_baseline
from conformance.oracle.clauses import CLAUSES
from conformance.profiles.model import DEFAULT_PROFILE
from conformance.report.markdown import clause_verdict, render, write_report


def baseline_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "known.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_baseline_reads_clauses_and_clause_flow_pairs_with_comments(tmp_path: Path):
    baseline = load_baseline(
        baseline_file(tmp_path, "G3  # no error state\n\nNEVER:scaffold-split\n")
    )
    assert baseline.entries == {("G3", None), ("NEVER", "scaffold-split")}


def test_a_clause_entry_covers_every_flow_and_a_flow_entry_only_its_own():
    baseline = Baseline(frozenset({("G3", None), ("NEVER", "scaffold-split")}))
    assert baseline.covers("G3", "scaffold-repeat")
    assert baseline.covers("NEVER", "scaffold-split")
    assert not baseline.covers("NEVER", "scaffold-mixed")
    assert not baseline.covers("G1", None)


@pytest.mark.parametrize("line", ["G16", "g3", "G3:", "G3:bad flow", "NEVER:a:b", "*"])
def test_a_line_that_is_not_a_known_clause_is_refused_with_its_line_number(
    tmp_path: Path, line: str
):
    with pytest.raises(BaselineError, match=r"known\.txt:2: .* is not CLAUSE or CLAUSE:FLOW"):
        load_baseline(baseline_file(tmp_path, f"G1\n{line}\n"))


def test_an_unreadable_baseline_is_refused(tmp_path: Path):
    with pytest.raises(BaselineError, match="cannot read"):
        load_baseline(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    ("outcomes", "verdict"),
    [
        ([], "not run"),
        (["passed", "passed"], "passed"),
        (["passed", "failed", "stale baseline"], "failed"),
        (["passed", "stale baseline"], "stale baseline"),
        (["expected failure", "passed"], "expected failure"),
        (["not judged", "passed"], "not judged"),
        (["not judged", "failed"], "failed"),
        (["not judged", "expected failure"], "not judged"),
        (["skipped", "skipped"], "skipped"),
        (["skipped", "passed"], "passed"),
    ],
)
def test_a_clause_verdict_is_its_worst_test(outcomes: list[str], verdict: str):
    assert clause_verdict(outcomes) == verdict


def test_the_report_has_a_row_per_clause_naming_the_target_and_the_profile(tmp_path: Path):
    path = tmp_path / "out" / "report.md"
    write_report(path, {"G1": ["passed"], "NEVER": ["failed", "passed"]},
                 target="http://127.0.0.1:3000/", profile=DEFAULT_PROFILE)  # fmt: skip
    text = path.read_text(encoding="utf-8")
    assert "Target: http://127.0.0.1:3000/" in text
    assert f"Profile: reference ({DEFAULT_PROFILE.source})" in text
    rows = [line for line in text.splitlines() if line.startswith(("| G", "| N"))]
    contract = [c.id for c in CLAUSES if not c.on_request]  # CASE is listed when cases ran
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == contract
    assert rows[0].endswith("| passed | 1 passed |")
    assert rows[-1].endswith("| failed | 1 passed, 1 failed |")
    assert rows[1].endswith("| not run | none |")


def test_a_pipe_in_a_clause_title_does_not_break_the_table():
    text = render({}, None, DEFAULT_PROFILE)
    g6 = next(line for line in text.splitlines() if line.startswith("| G6 |"))
    assert g6.count(" | ") == 3
    assert "the reference app (started by the kit)" in text
