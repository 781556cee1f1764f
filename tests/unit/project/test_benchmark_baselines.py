"""benchmarks/baseline.py: the last release's figures read, written and printed beside
today's; a bad baseline file is a clear error naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# benchmarks/ is not a package pyright is pointed at; the module is typed all the same.
from benchmarks.baseline import (  # pyright: ignore[reportMissingTypeStubs]
    Baseline,
    BaselineError,
    Figure,
    beside,
    change,
    read_baseline,
    write_baseline,
)

FIGURES = [
    Figure("clean turns/s", 150.0, "/s", "higher"),
    Figure("app CPU per clean turn", 2.5, "ms", "lower"),
]


def test_a_written_baseline_reads_back_with_its_date_commit_and_machine(tmp_path: Path):
    path = tmp_path / "baselines" / "load.json"
    written = write_baseline(path, FIGURES)
    assert read_baseline(path) == written
    assert written.figures == {"clean turns/s": 150.0, "app CPU per clean turn": 2.5}
    assert all((written.recorded, written.commit, written.machine))


def test_no_file_is_no_baseline_yet(tmp_path: Path):
    assert read_baseline(tmp_path / "none.json") is None
    assert "no baseline yet (write one with --write-baseline)" in beside(FIGURES, None)[0]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not a readable JSON file"),
        ("[]", "not a JSON object"),
        ('{"recorded": "2026-12-07", "commit": "abc", "machine": "m"}', "an object figures"),
        (
            '{"recorded": "d", "commit": "c", "machine": "m", "figures": {"x": "fast"}}',
            "figure 'x' is not a number: 'fast'",
        ),
        (
            '{"recorded": "d", "commit": "c", "machine": "m", "figures": {"x": true}}',
            "figure 'x' is not a number: True",
        ),
    ],
)
def test_a_bad_baseline_file_is_an_error_naming_the_file_and_the_problem(
    tmp_path: Path, text: str, problem: str
):
    path = tmp_path / "load.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as caught:
        read_baseline(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("now", "then", "better", "said"),
    [
        (150, 100, "higher", "+50% (better)"),
        (80, 100, "higher", "-20% (worse)"),
        (3.3, 3.0, "lower", "+10% (worse)"),
        (2.7, 3.0, "lower", "-10% (better)"),
        (100.2, 100, "higher", "same"),
        (5, 0, "lower", "n/a"),
    ],
)
def test_the_change_says_whether_it_is_for_the_better(
    now: float, then: float, better: str, said: str
):
    assert change(now, then, better) == said  # pyright: ignore[reportArgumentType]


def test_each_figure_is_printed_beside_its_baseline_and_a_new_one_has_none():
    baseline = Baseline("2026-12-01", "abc1234", "2 CPUs", {"clean turns/s": 300.0})
    lines = beside(FIGURES, baseline)
    assert lines[0] == "Today beside the last release (baseline: 2026-12-01, abc1234, 2 CPUs):"
    assert "| clean turns/s (higher is better) | 300.00 /s | 150.00 /s | -50% (worse) |" in lines
    assert "| app CPU per clean turn (lower is better) | n/a | 2.50 ms | n/a |" in lines


def test_the_committed_baselines_read():
    folder = Path(__file__).resolve().parents[3] / "benchmarks" / "baselines"
    files = sorted(folder.glob("*.json"))
    assert [f.name for f in files] == ["filter.json", "load.json"]
    for file in files:
        baseline = read_baseline(file)
        assert baseline is not None, file
        assert baseline.figures, file
        assert json.loads(file.read_text(encoding="utf-8"))["figures"] == baseline.figures
