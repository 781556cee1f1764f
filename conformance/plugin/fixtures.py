"""The kit's fixtures: the target, the browser, the wiring check, the plays and the page.

Registered by the plugin (`pytest_plugins`). Session fixtures are per worker: under
pytest-xdist each worker starts (or reaches) the target, launches its browser and proves
the wiring once. Turn KEYs are unique per run (conformance/run/questions.py), never part of
a test id, so collection is stable and a long-running external mock never mixes two runs'
turns. A failing test leaves its evidence (conformance/report/evidence.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Generator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conformance.browser.session import BrowserSession, new_context
from conformance.oracle.target import Target
from conformance.plugin.options import KitConfig, kit_of
from conformance.run.questions import new_key, preflight_key, wiring_key

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

    from conformance.browser.chat import ChatPage
    from conformance.oracle.played import Play
    from conformance.run.plays import Plays

CALL_REPORT = pytest.StashKey[pytest.TestReport]()
"""A test's call report, kept by the plugin for the fixtures' teardown (did it fail?)."""
_KEYS = pytest.StashKey[list[str]]()


def _failed(request: pytest.FixtureRequest) -> bool:
    """Whether the test failed (set-up failures included: no call report yet)."""
    report = request.node.stash.get(CALL_REPORT, None)
    return report is None or report.failed


@pytest.fixture(scope="session")
def conformance_kit(pytestconfig: pytest.Config) -> KitConfig:
    return kit_of(pytestconfig)


@pytest.fixture(scope="session")
def conformance_target(
    conformance_kit: KitConfig, tmp_path_factory: pytest.TempPathFactory
) -> Generator[Target]:
    from conformance.oracle.upstream import Upstream
    from conformance.run.preflight import add_cases, check_reachable, register_side_calls

    kit = conformance_kit
    with ExitStack() as stack:
        if kit.app_url is None or kit.mock_url is None:
            from conformance.run.reference import reference_stack

            data_dir = tmp_path_factory.mktemp("reference")
            started = stack.enter_context(reference_stack(data_dir, kit.reference_model))
            app_url, mock_url, log_file = started.app_url, started.mock_url, started.log_file
        else:
            app_url, mock_url = kit.app_url, kit.mock_url
            log_file = kit.guard_log or kit.app_log
        upstream = Upstream(mock_url, kit.turn_timeout_s)
        stack.callback(upstream.close)
        target = Target(
            app_url=app_url,
            mock_url=mock_url,
            log_file=log_file,
            profile=kit.profile,
            upstream=upstream,
            timeout_s=kit.turn_timeout_s,
            artifacts=kit.artifacts,
            stop_within_ms=kit.stop_within_ms,
            log_source="guard" if kit.guard_log is not None else "app",
        )
        check_reachable(target)
        register_side_calls(target)
        add_cases(target, kit.cases)
        yield target


@pytest.fixture(scope="session")
def conformance_browser(conformance_kit: KitConfig) -> Generator[Browser]:
    from playwright.sync_api import Error, sync_playwright

    from conformance.browser.session import launch
    from conformance.run.preflight import fail

    if not Path(conformance_kit.chromium).exists():
        fail(
            f"no browser at {conformance_kit.chromium} (install chromium, or pass --chromium-path)"
        )
    playwright: Playwright = sync_playwright().start()
    try:
        try:
            browser = launch(playwright, conformance_kit.chromium)
        except Error as exc:
            fail(f"the browser did not start: {exc}")
        yield browser
        browser.close()
    finally:
        playwright.stop()


@pytest.fixture(scope="session")
def conformance_session(
    conformance_target: Target, conformance_browser: Browser, conformance_kit: KitConfig
) -> Generator[BrowserSession]:
    target = conformance_target
    context = new_context(conformance_browser, target.profile)
    session = BrowserSession(
        context, target.profile, target.app_url, target.timeout_s, conformance_kit.trace
    )
    try:
        yield session
    finally:
        session.close()


@pytest.fixture(scope="session")
def conformance_wired(conformance_target: Target, conformance_session: BrowserSession) -> Target:
    """The once-per-run set-up, the wiring check (a first turn must reach this mock's
    journal), then the page's declared parts (once per worker)."""
    from conformance.run.preflight import check_once_setup, check_parts, check_wiring

    check_once_setup(conformance_session)
    chat = conformance_session.chat()
    key = wiring_key()
    view = check_wiring(conformance_target, chat, key)
    check_parts(conformance_target, chat, view, key, preflight_key)
    return conformance_target


@pytest.fixture
def conformance_key(request: pytest.FixtureRequest) -> Callable[[], str]:
    """Makes fresh KEYs for a test that drives the page itself (kept for its evidence)."""
    keys = request.node.stash.setdefault(_KEYS, [])

    def make() -> str:
        keys.append(new_key())
        return keys[-1]

    return make


@pytest.fixture(scope="session")
def conformance_plays(
    conformance_wired: Target,
    conformance_session: BrowserSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Plays:
    """The worker's plays: each flow played once, on first use."""
    from conformance.run.plays import Plays

    traces = tmp_path_factory.mktemp("plays")
    return Plays(conformance_wired, conformance_session, new_key, traces)


@pytest.fixture
def conformance_play(
    conformance_plays: Plays, conformance_wired: Target, request: pytest.FixtureRequest
) -> Generator[Callable[[str], Play]]:
    """`play(flow)`: the flow's play, shared with every other test judged on it. A play
    that could not be finished fails the test with its error; a failing test leaves the
    evidence of the plays it used."""
    from conformance.oracle.played import PlayFailed
    from conformance.report.evidence import keep_evidence

    used: list[Play] = []

    def play(flow: str) -> Play:
        played = conformance_plays.get(flow)
        used.append(played)
        if played.error is not None:
            raise PlayFailed(f"flow {flow!r}: the turn could not be played: {played.error}")
        return played

    yield play
    if _failed(request):
        traces = [p.trace for p in used if p.trace is not None]
        keep_evidence(
            request.node.nodeid,
            conformance_wired,
            dom=lambda: "\n".join(p.recorded for p in used),
            keys=[key for p in used for key in p.keys],
            trace=(lambda path: shutil.copyfile(traces[0], path)) if traces else None,
            plays=[p for i, p in enumerate(used) if all(p is not q for q in used[:i])],
        )


@pytest.fixture
def conformance_chat(
    conformance_wired: Target, conformance_session: BrowserSession, request: pytest.FixtureRequest
) -> Generator[ChatPage]:
    """The chat page, freshly loaded, with a recording that starts with this test: for a
    test that drives the page itself rather than judging a play."""
    from conformance.report.evidence import keep_evidence

    session = conformance_session
    traced = session.begin_chunk(request.node.nodeid)
    chat = session.chat()
    try:
        chat.open()
        yield chat
    finally:
        if _failed(request):
            keep_evidence(
                request.node.nodeid,
                conformance_wired,
                dom=chat.recorded,
                keys=request.node.stash.get(_KEYS, []),
                trace=session.end_chunk if traced else None,
            )
            session.discard_page()
        elif traced:
            session.end_chunk(None)
