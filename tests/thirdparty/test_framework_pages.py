"""The kit against chat pages written as the Python frameworks' tutorials write them, each with
the one line of docs/transport.md added and the built wheel installed into the page's own venv
(tests/thirdparty/framework_pages.py): every core clause passes.

What such a page cannot be checked on is left out of its profile's capabilities and skips: the
tutorials show no reasoning (G9), write no per-turn log (G10) and run no tools (G12, G14), and
only Chainlit's page has a Stop (G11). Every family flow is played (G13, G15), as the reference
app's gate run plays them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.oracle.clauses import CLAUSES
from conformance.profiles.loader import load_profile
from mock_llm import serve_mock

from ..conformance_selftest.kit_runs import KIT_DEADLINE_S, KitRun, run_kit
from .framework_pages import PAGE_APPS, STARTUP_DEADLINE_S, FrameworkPage, serve_page

pytestmark = pytest.mark.timeout(KIT_DEADLINE_S + STARTUP_DEADLINE_S + 600)


@dataclass(frozen=True)
class PageRun:
    page: FrameworkPage
    kit: KitRun

    @property
    def has_nothing_for(self) -> set[str]:
        """The clauses whose capability the page's profile leaves out (the module docstring)."""
        profile = load_profile(self.page.profile)
        return {c.id for c in CLAUSES if c.needs is not None and not profile.has(c.needs)}


@pytest.fixture(scope="module", params=sorted(PAGE_APPS))
def kit_on_page(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> PageRun:
    page = PAGE_APPS[request.param]
    out = tmp_path_factory.mktemp(f"page-{page.name}")
    with serve_mock() as mock_url, serve_page(page, f"{mock_url}/v1", out / "logs") as app_url:
        baseline = page.expected_failures
        extra = [] if baseline is None else ["--expected-failures", str(baseline)]
        kit = run_kit(app_url, mock_url, page.profile, out, *extra, every_family_flow=True)
        return PageRun(page, kit)


def test_a_tutorial_chat_page_with_the_one_line_passes_every_core_clause(kit_on_page: PageRun):
    """Every clause the page can be checked on passes, but what the page's baseline names
    (pages/*-expected-failures.txt: what the framework as its tutorial uses it cannot show),
    which fails as expected."""
    kit = kit_on_page.kit
    assert kit.returncode == 0, kit.describe()
    baselined = kit.with_verdict("expected failure")
    assert kit.with_verdict("passed") == set(kit.report) - kit_on_page.has_nothing_for - baselined


def test_what_a_tutorial_page_has_nothing_for_is_skipped_not_passed(kit_on_page: PageRun):
    kit = kit_on_page.kit
    assert kit.with_verdict("skipped") == kit_on_page.has_nothing_for, kit.describe()
