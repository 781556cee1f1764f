"""The kit as a pytest plugin: the hooks that turn marked tests into clause verdicts.

Loaded through the `pytest11` entry point (installed with the project's wheel), so
`pytest conformance` in a checkout and `pytest --pyargs conformance` after `pip install`
both work. It stays inert for test runs that collect no conformance test: options are
registered, but nothing starts and no report is written. The options live in
conformance/options.py, the fixtures in conformance/fixtures.py.

Deliberate choices:
- A baselined failure is a strict xfail: it passes as expected-to-fail, and a baselined
  clause that now passes fails the run as a stale baseline.
- The verdicts are gathered where the reports arrive (the controller, under xdist), in the
  config's stash, and written as the report once the session ends.
- A test whose flow could not be played (PlayFailed: the turn never finished, the page
  broke) is `not judged`, with the play's one cause, never `failed`: a stalled turn says
  nothing about the clause, and a NEVER that failed would read as a leak.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from conformance.fixtures import CALL_REPORT
from conformance.options import KIT_KEY, add_options, kit_cases, kit_config, kit_of
from conformance.oracle.cases import case_flows
from conformance.oracle.clauses import BY_ID
from conformance.oracle.played import PlayFailed
from conformance.report.html_page import Failure

pytest_plugins = ["conformance.fixtures"]

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


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "clause(id, flow=None): the contract clause a conformance test checks (and its flow)",
    )
    config.stash[VERDICTS_KEY] = Verdicts()
    config.pluginmanager.register(config.stash[VERDICTS_KEY], "conformance-verdicts")


def pytest_unconfigure(config: pytest.Config) -> None:
    if VERDICTS_KEY in config.stash:
        config.pluginmanager.unregister(config.stash[VERDICTS_KEY])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A CASE test runs once per case flow, the flow's name its id."""
    marker = metafunc.definition.get_closest_marker("clause")
    if marker is not None and marker.args[0] == "CASE":
        try:
            names = case_flows(kit_cases(metafunc.config))
        except pytest.UsageError:  # raised again once collected, where it ends the run cleanly
            names = []
        metafunc.parametrize("flow", names, ids=names)


def _clause_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("clause")
    return None if marker is None else str(marker.args[0])


def _flow_of(item: pytest.Item) -> str | None:
    """The flow a test plays: its `flow` parameter, else the clause marker's `flow=`."""
    callspec = getattr(item, "callspec", None)
    flow = callspec.params.get("flow") if callspec is not None else None
    if flow is None:
        marker = item.get_closest_marker("clause")
        flow = marker.kwargs.get("flow") if marker is not None else None
    return flow if isinstance(flow, str) else None


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect, so the baseline sees every test
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kit_items = [item for item in items if _clause_of(item) is not None]
    if not kit_items:
        return
    kit = kit_config(config)
    if not kit.cases:  # no --cases: the CASE test has no flow to run, and is not collected
        unused = [item for item in kit_items if _clause_of(item) == "CASE"]
        if unused:
            config.hook.pytest_deselected(items=unused)
            items[:] = [item for item in items if item not in unused]
            kit_items = [item for item in kit_items if item not in unused]
    config.stash[KIT_KEY] = kit
    tested = {(_clause_of(item), _flow_of(item)) for item in kit_items}
    for clause, flow in sorted(kit.baseline.entries, key=str):
        if flow is not None and (clause, flow) not in tested:
            flows = sorted(f for c, f in tested if c == clause and f is not None)
            raise pytest.UsageError(
                f"conformance: the baseline entry {clause}:{flow} matches no test"
                f" (the flows {clause} is tested with: {', '.join(flows) or 'none'})"
            )
    for item in kit_items:
        clause = _clause_of(item)
        assert clause is not None
        flow = _flow_of(item)
        item.user_properties.append((CLAUSE_PROPERTY, clause))
        item.user_properties.append((FLOW_PROPERTY, flow or ""))
        if kit.baseline.covers(clause, flow):
            reason = f"baselined in --expected-failures ({clause}{':' + flow if flow else ''})"
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_report_collectionfinish(config: pytest.Config) -> list[str] | None:
    """The target and the profile, once collection has resolved them (a session header is
    printed before collection, when no kit test is known yet)."""
    if KIT_KEY not in config.stash:
        return None
    kit = config.stash[KIT_KEY]
    target = kit.app_url or "the reference app (started by the kit)"
    return [f"conformance: target {target}, profile {kit.profile.name} ({kit.profile.source})"]


def _verdict(report: pytest.TestReport) -> str:
    if report.skipped and hasattr(report, "wasxfail"):
        return "expected failure"
    if report.failed and str(report.longrepr).startswith("[XPASS(strict)]"):
        return "stale baseline"
    if report.skipped:
        return "skipped"
    return "passed" if report.passed else "failed"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[CALL_REPORT] = report
    clause = _clause_of(item)
    if clause is None or not (report.when == "call" or report.failed):
        return report
    verdict = _verdict(report)
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
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
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
