"""The conformance kit proves the guardrail on the real Open WebUI, by every route.

Four whole kit runs (tests/thirdparty/openwebui_runs.py), each against its own Open WebUI
0.12.4 from PyPI: straight from the mock it fails the leak clauses (Open WebUI shows raw
markup) and passes the clean ones; behind the guard proxy, through either of Open WebUI's
connections, every clause the kit can check on its page passes; with our Filter Function
installed, every clause a filter can honour passes and the rest fail exactly as its strict
baseline says. About 5 minutes in all once Open WebUI is installed.
"""

from __future__ import annotations

import pytest

from ..conformance_selftest.kit_runs import KIT_DEADLINE_S, KitRun
from .openwebui import STARTUP_DEADLINE_S
from .openwebui_runs import CLEAN_CLAUSES, LEAK_CLAUSES, NOT_OPEN_WEBUIS, run_route

pytestmark = pytest.mark.timeout(KIT_DEADLINE_S + STARTUP_DEADLINE_S + 120)


def kit_run(route: str, tmp_path_factory: pytest.TempPathFactory) -> KitRun:
    result = run_route(route, tmp_path_factory.mktemp(f"openwebui-{route}"))
    assert result.cases, f"the kit wrote no JUnit results; {result.describe()}"
    return result


@pytest.fixture(scope="module")
def direct(tmp_path_factory: pytest.TempPathFactory) -> KitRun:
    return kit_run("direct", tmp_path_factory)


@pytest.fixture(scope="module", params=["guard-openai", "guard-ollama"])
def guarded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> KitRun:
    return kit_run(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> KitRun:
    return kit_run("filter", tmp_path_factory)


def test_straight_from_the_mock_open_webui_fails_every_leak_clause(direct: KitRun) -> None:
    assert direct.returncode != 0
    assert direct.with_verdict("failed") == LEAK_CLAUSES, direct.describe()


def test_straight_from_the_mock_open_webui_passes_the_clean_clauses(direct: KitRun) -> None:
    assert direct.with_verdict("passed") == CLEAN_CLAUSES, direct.describe()


def test_behind_the_guard_proxy_every_clause_the_page_allows_passes(guarded: KitRun) -> None:
    assert guarded.returncode == 0, guarded.describe()
    assert guarded.with_verdict("skipped") == NOT_OPEN_WEBUIS, guarded.describe()
    assert guarded.with_verdict("passed") == set(guarded.report) - NOT_OPEN_WEBUIS


def test_with_the_filter_function_the_page_never_shows_markup(filtered: KitRun) -> None:
    assert CLEAN_CLAUSES | {"G4", "G6", "G8", "NEVER"} <= filtered.with_verdict("passed"), (
        filtered.describe()
    )


def test_with_the_filter_function_only_its_baselined_clauses_fail(filtered: KitRun) -> None:
    # The baseline's entries are strict xfails: the run passes only if each of them fails
    # and nothing else does.
    assert filtered.returncode == 0, filtered.describe()
