"""The kit as a pytest plugin: the hooks that turn marked tests into clause verdicts.

Loaded through the `pytest11` entry point (`conformance = "conformance.plugin"`, installed
with the project's wheel), so `pytest conformance` in a checkout and `pytest --pyargs
conformance` after `pip install` both work. It stays inert for test runs that collect no
conformance test: options are registered, but nothing starts and no report is written.

This module holds only the hooks; what they do is in the modules beside it: `options.py`
(the flags, their variables, `KitConfig`), `fixtures.py` (the target, the browser, the plays
and the page), `collection.py` (clauses, flows and the baseline on the collected tests) and
`verdicts.py` (each test's verdict, its failure header, the report at the end).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from conformance.oracle.cases import case_flows
from conformance.plugin.collection import clause_of, mark_kit_items
from conformance.plugin.fixtures import CALL_REPORT
from conformance.plugin.options import KIT_KEY, add_options, kit_cases
from conformance.plugin.verdicts import VERDICTS_KEY, Verdicts, give_verdict, write_verdicts

pytest_plugins = ["conformance.plugin.fixtures"]


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


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect, so the baseline sees every test
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_kit_items(config, items)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str] | None:
    """The target and the profile, once collection has resolved them (a session header is
    printed before collection, when no kit test is known yet)."""
    if KIT_KEY not in config.stash:
        return None
    kit = config.stash[KIT_KEY]
    target = kit.app_url or "the reference app (started by the kit)"
    return [f"conformance: target {target}, profile {kit.profile.name} ({kit.profile.source})"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[CALL_REPORT] = report
    clause = clause_of(item)
    if clause is not None and (report.when == "call" or report.failed):
        give_verdict(item, call, report, clause)
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    write_verdicts(session)
