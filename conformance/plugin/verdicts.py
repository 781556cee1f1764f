"""Each kit test's verdict: the word a report gives it, the header its failure starts with,
the JUnit properties that carry it, and the verdicts of a run gathered for its report.

Deliberate choices:
- A test whose flow could not be played (PlayFailed: the turn never finished, the page
  broke) is `not judged`, with the play's one cause, never `failed`: a stalled turn says
  nothing about the clause, and a NEVER that failed would read as a leak.
- The verdicts are gathered where the reports arrive (the controller, under xdist), in the
  config's stash, and written as the report once the session ends.
"""

from __future__ import annotations

import pytest

from conformance.oracle.clauses import BY_ID
from conformance.oracle.played import PlayFailed
from conformance.plugin.options import KIT_KEY, kit_of
from conformance.report.html_page import Failure

CLAUSE_PROPERTY = "conformance_clause"
FLOW_PROPERTY = "conformance_flow"
VERDICT_PROPERTY = "conformance_verdict"
NOT_JUDGED = "not judged"
"""The verdict of a clause test whose flow could not be played (PlayFailed)."""


class Verdicts:
    """Each kit test's verdict, by clause, and its failures, as its reports come in."""

    def __init__(self) -> None:
        self.by_clause: dict[str, list[str]] = {}
        self.failures: list[Failure] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        clause, verdict = properties.get(CLAUSE_PROPERTY), properties.get(VERDICT_PROPERTY)
        if clause is None or verdict is None:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.by_clause.setdefault(str(clause), []).append(str(verdict))
            if verdict in ("failed", NOT_JUDGED, "stale baseline"):
                failure = Failure(report.nodeid, str(clause), str(verdict), report.longreprtext)
                self.failures.append(failure)


VERDICTS_KEY = pytest.StashKey[Verdicts]()


def verdict_of(report: pytest.TestReport) -> str:
    if report.skipped and hasattr(report, "wasxfail"):
        return "expected failure"
    if report.failed and str(report.longrepr).startswith("[XPASS(strict)]"):
        return "stale baseline"
    if report.skipped:
        return "skipped"
    return "passed" if report.passed else "failed"


def give_verdict(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, clause: str
) -> None:
    """Put the verdict on `report` (and on `item`, for JUnit), and start a failure's message
    with the clause it breaks."""
    verdict = verdict_of(report)
    if verdict == "failed" and call.excinfo is not None and call.excinfo.errisinstance(PlayFailed):
        verdict = NOT_JUDGED
    report.user_properties.append((VERDICT_PROPERTY, verdict))
    # JUnit XML reads properties from the teardown report, which pytest builds from the item.
    item.user_properties.append((VERDICT_PROPERTY, verdict))
    title = BY_ID[clause].title if clause in BY_ID else "unknown clause"
    if verdict == "stale baseline":
        report.longrepr = (
            f"stale baseline: clause {clause} ({title}) passes now on this flow;"
            " take it out of the --expected-failures file"
        )
    elif verdict == NOT_JUDGED:
        report.longrepr = (
            f"conformance clause {clause} not judged ({title}): the turn it is judged on"
            f" could not be played\n\n{report.longreprtext}"
        )
    elif verdict == "failed":
        report.longrepr = f"conformance clause {clause} failed: {title}\n\n{report.longreprtext}"


def write_verdicts(session: pytest.Session) -> None:
    """Write the report where the verdicts were gathered: under xdist the controller, which
    collects nothing itself but has every kit test's verdict."""
    config = session.config
    verdicts = config.stash[VERDICTS_KEY]
    rows = verdicts.by_clause
    if hasattr(config, "workerinput") or (KIT_KEY not in config.stash and not rows):
        return
    kit = kit_of(config)
    if kit.report is None:
        return
    from conformance.report.markdown import write_report

    write_report(kit.report, rows, target=kit.app_url, profile=kit.profile,
                 failures=verdicts.failures, artifacts=kit.artifacts)  # fmt: skip
