"""The kit on stranger pages that lack a part their profile declares, or end a turn their
own way: it says what is missing, never raises a false alarm, and names one cause.

Each case is a module of strangers/ (its page, its target, its profile); the kit runs in a
subprocess as a user runs it (kit_runs.run_kit), selecting only the tests that prove the
point (`-k`): a page that lacks a declared part is stopped by the preflight, before any
clause, with one line; a turn that ends in the error state ends the play whatever the done
rule says; a turn that never ends leaves its clauses not judged, never failed as a leak; an
error copy with a framework's prefix passes where the profile says how to match it; a page
that shows a failed turn only as a toast, with no message, passes every clause it honours.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conformance.run.preflight import EXIT_PREFLIGHT
from mock_llm import MockClient, serve_mock

from ..support.deadlines import DEADLINE_S
from .kit_runs import KIT_DEADLINE_S, KitRun, run_kit
from .strangers import (
    never_finishes,
    no_stop_control,
    no_thinking,
    no_tools,
    prefixed_error,
    stop_stays_after_error,
    toast_error,
    unmarked_error,
)
from .strangers.turn_serving import serve_stranger
from .targets.base import BaseTarget

pytestmark = [pytest.mark.slow, pytest.mark.timeout(KIT_DEADLINE_S + 4 * DEADLINE_S)]

G1_ONLY = ("-k", "test_g1_a_clean_turn")
"""The one clause test a preflight run selects: the preflight runs before it, or stops it."""
PREFLIGHT_LINE = re.compile(r"conformance preflight: (?P<message>.*?)(?: !+)?$", re.MULTILINE)


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with serve_mock() as url:
        yield url


def kit_on(
    case: ModuleType,
    mock_url: str,
    tmp_path: Path,
    *extra: str,
    profile: str | None = None,
    target: type[BaseTarget] | None = None,
) -> KitRun:
    """Serve the case's target (or `target`) and run the kit against it with the case's
    profile (or `profile`, TOML text)."""
    path = tmp_path / "profile.toml"
    path.write_text(case.TARGET_PROFILE if profile is None else profile, encoding="utf-8")
    with serve_stranger(target or case.Target, mock_url, tmp_path / "app.log") as url:
        return run_kit(url, mock_url, path, tmp_path / "kit", *extra)


def preflight_message(run: KitRun) -> str:
    """The preflight's one line, without its prefix; it must have stopped the run."""
    assert run.returncode == EXIT_PREFLIGHT, run.describe()
    found = [m["message"] for m in PREFLIGHT_LINE.finditer(run.output)]
    assert found, f"no preflight line; {run.describe()}"
    assert not [case for case in run.cases if case.outcome in ("passed", "failed")], (
        f"a clause was judged after the preflight: {run.cases}"
    )
    return found[0]


# --- a part the profile declares but the page lacks ------------------------------------------


@pytest.mark.parametrize(
    ("case", "extra"),
    [
        pytest.param(no_thinking, (), id="thinking"),
        pytest.param(
            no_stop_control, ("--turn-timeout", str(no_stop_control.TIMEOUT_S)), id="stop"
        ),
        pytest.param(no_tools, (), id="tools"),
        pytest.param(unmarked_error, (), id="error"),
    ],
)
def test_a_declared_part_the_page_lacks_stops_the_preflight_with_one_line(
    case: ModuleType, extra: tuple[str, ...], mock_url: str, tmp_path: Path
) -> None:
    run = kit_on(case, mock_url, tmp_path, *G1_ONLY, *extra)
    assert preflight_message(run) == case.MESSAGE


# --- a turn that ends in the error state ends the play ----------------------------------------


def test_a_turn_ending_in_the_error_state_is_finished_though_the_done_rule_never_fires(
    mock_url: str, tmp_path: Path
) -> None:
    run = kit_on(stop_stays_after_error, mock_url, tmp_path,
                 "-k", "test_g3 or (test_raw_scaffolding and scaffold-repeat)")  # fmt: skip
    judged = {case.clause: case.outcome for case in run.cases}
    assert judged == {"G3": "passed", "NEVER": "passed"}, run.describe()
    assert run.returncode == 0, run.describe()


def test_a_turn_that_never_finishes_leaves_its_clauses_not_judged_with_one_cause(
    mock_url: str, tmp_path: Path
) -> None:
    run = kit_on(
        never_finishes, mock_url, tmp_path,
        "--turn-timeout", str(never_finishes.TIMEOUT_S),
        "-k", "scaffold-recover and (test_raw_scaffolding or test_a_scaffold_only)",
    )  # fmt: skip
    assert {case.clause for case in run.cases} == {"G2", "NEVER"}, run.describe()
    for case in run.cases:
        assert case.verdict == "not judged", f"{case.name}: {case.verdict}; {run.describe()}"
        assert f"conformance clause {case.clause} not judged" in case.message, case.message
        assert never_finishes.CAUSE in case.message, case.message
        assert "reached the page" not in case.message, f"{case.name} claims a leak"
    assert run.report["G2"] == run.report["NEVER"] == "not judged", run.report
    assert run.returncode == 1, run.describe()
    with MockClient(mock_url, timeout=DEADLINE_S) as mock:
        turns = {e.key for e in mock.requests().requests if e.flow == "scaffold-recover"}
    assert len(turns) == 1, f"the stalled flow was played {len(turns)} times, not once"


# --- a failed turn shown only as a toast outside the thread -----------------------------------


def test_a_page_showing_a_failed_turn_only_as_a_toast_passes_every_clause_it_honours(
    mock_url: str, tmp_path: Path
) -> None:
    run = kit_on(toast_error, mock_url, tmp_path, target=toast_error.Left)
    assert [case.outcome for case in run.cases if case.clause == "G3"] == ["passed"], run.describe()
    assert {case.outcome for case in run.cases} == {"passed", "skipped"}, run.describe()
    assert run.returncode == 0, run.describe()


# --- the error copy behind a framework's prefix -----------------------------------------------


def test_a_prefixed_error_copy_passes_g3_where_the_profile_matches_it_by_containing(
    mock_url: str, tmp_path: Path
) -> None:
    run = kit_on(prefixed_error, mock_url, tmp_path, "-k", "test_g3")
    assert [(case.clause, case.outcome) for case in run.cases] == [("G3", "passed")], run.describe()


def test_a_prefixed_error_copy_fails_g3_with_an_exact_match_quoting_both(
    mock_url: str, tmp_path: Path
) -> None:
    run = kit_on(prefixed_error, mock_url, tmp_path, "-k", "test_g3",
                 profile=prefixed_error.TARGET_PROFILE.split("[error_text]")[0])  # fmt: skip
    [case] = run.cases
    assert case.outcome == "failed", run.describe()
    shown = f"{prefixed_error.PREFIX}The model returned a malformed reply — please try again."
    assert f"G3: the error shows {shown!r}, the contract wants exactly" in case.message
