"""A clause test whose flow could not be played is `not judged`, never `failed` (in process,
pytester): its header, its verdict property and the report say so, with the play's cause."""

from __future__ import annotations

import pytest

from conformance.oracle.clauses import BY_ID

from ...support.deadlines import DEADLINE_S
from .test_kit_plugin import QUIET, junit_properties, report_rows

pytestmark = pytest.mark.timeout(DEADLINE_S)

CAUSE = (
    "the turn never finished: neither the done rule (the message's data-state set and not"
    " 'streaming') nor the error selector (`.err`) fired in 8 s"
)
STALLED = f"""
import pytest

from conformance.oracle.played import PlayFailed

@pytest.mark.clause("NEVER")
@pytest.mark.parametrize("flow", ["scaffold-recover"])
def test_never(flow):
    raise PlayFailed("flow 'scaffold-recover': the turn could not be played:"
                     " TurnNeverFinished: {CAUSE}")

@pytest.mark.clause("G4", flow="scaffold-mixed")
def test_mixed():
    assert False, "flow 'scaffold-mixed': the page showed the markup"
"""
"""A clause test on a play that stalled, and one that fails on its own."""


def test_a_clause_on_a_play_that_could_not_be_played_is_not_judged_with_its_cause(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_stalled=STALLED)
    result = pytester.runpytest(*QUIET, "--junitxml=out.xml", "--conformance-report=report.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"conformance clause NEVER not judged ({BY_ID['NEVER'].title}): the turn it is"
            " judged on could not be played",
            f"*PlayFailed: flow 'scaffold-recover': the turn could not be played:*{CAUSE}",
        ]
    )
    assert "conformance clause NEVER failed" not in result.stdout.str()
    properties = junit_properties(pytester.path / "out.xml")
    assert properties["test_never[scaffold-recover]"]["conformance_verdict"] == "not judged"
    assert properties["test_mixed"]["conformance_verdict"] == "failed"


def test_the_report_gives_such_a_clause_not_judged_and_a_failing_one_failed(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_stalled=STALLED)
    pytester.runpytest(*QUIET, "--conformance-report=report.md")
    rows = report_rows(pytester.path / "report.md")
    assert rows["NEVER"] == ("not judged", "1 not judged")
    assert rows["G4"] == ("failed", "1 failed")
