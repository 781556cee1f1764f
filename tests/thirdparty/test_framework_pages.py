"""The kit against chat pages written as the Python frameworks' tutorials write them, each with
the one line of docs/transport.md added and the built wheel installed into the page's own venv
(tests/thirdparty/framework_pages.py): every core clause passes.

What such a page cannot be checked on is declared in its profile and skips (NOT_A_TUTORIALS):
the tutorials show no reasoning (G9), write no per-turn log (G10), have no Stop (G11) and run
no tools (G12, G14). Every family flow is played (G13, G15), as the reference app's gate run
plays them.
"""

from __future__ import annotations

import pytest

from mock_llm import serve_mock

from ..conformance_selftest.kit_runs import KIT_DEADLINE_S, KitRun, run_kit
from .framework_pages import PAGE_APPS, STARTUP_DEADLINE_S, serve_page

pytestmark = pytest.mark.timeout(KIT_DEADLINE_S + STARTUP_DEADLINE_S + 600)

NOT_A_TUTORIALS = {"G9", "G10", "G11", "G12", "G14"}
"""The clauses a tutorial's page has nothing for (see the module docstring)."""


@pytest.fixture(scope="module", params=sorted(PAGE_APPS))
def kit_on_page(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> KitRun:
    page = PAGE_APPS[request.param]
    out = tmp_path_factory.mktemp(f"page-{page.name}")
    with serve_mock() as mock_url, serve_page(page, f"{mock_url}/v1", out / "logs") as app_url:
        baseline = page.expected_failures
        extra = [] if baseline is None else ["--expected-failures", str(baseline)]
        return run_kit(app_url, mock_url, page.profile, out, *extra, every_family_flow=True)


def test_a_tutorial_chat_page_with_the_one_line_passes_every_core_clause(kit_on_page: KitRun):
    """Every core clause passes, but what the page's baseline names (pages/*-expected-failures.txt:
    what the framework as its tutorial uses it cannot show), which fails as expected."""
    assert kit_on_page.returncode == 0, kit_on_page.describe()
    baselined = kit_on_page.with_verdict("expected failure")
    assert kit_on_page.with_verdict("passed") == set(kit_on_page.report) - NOT_A_TUTORIALS - (
        baselined
    )


def test_what_a_tutorial_page_has_nothing_for_is_skipped_not_passed(kit_on_page: KitRun):
    assert kit_on_page.with_verdict("skipped") == NOT_A_TUTORIALS, kit_on_page.describe()
