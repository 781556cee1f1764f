"""E2E layer: the mock LLM and the notes app on free ports, driven by a real Chromium.

Playwright cannot download its browsers here, so it launches Debian's Chromium as the kit
does (its headless shell, `/usr/lib/chromium/chromium-headless-shell`, else the full
`/usr/lib/chromium/chromium`; `/usr/bin/chromium` is a wrapper script);
scripts/ensure_chromium.sh installs both packages when they are missing. A missing browser
fails the run with a clear message, never a skip. A test gets the app's page loaded afresh
(`chat`): the worker's one tab on the app, reloaded with a new conversation, as the
conformance kit reloads its page per test (docs/benchmarks.md); a test that changes the tab
itself (listeners, init scripts, other sites) opens a `tab` of its own. Both live in one
browser context per worker: the page keeps a conversation in sessionStorage, which is per
tab and cleared before each load, and nothing in cookies or localStorage, so a load isolates
a test as a new context would. Measured: a context, its tab and the page loaded cost about 1
CPU-second, a tab on a warm context about 0.6, a load in the same tab about 0.2. Screenshots
a test takes of the page's states (idle, streaming, error) are written to test-results/ only
when that test fails. Every wait is on a page state (Playwright's auto-waiting `expect`) or
a settled journal, under the shared deadline; none is a fixed pause.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, ViewportSize, expect

from conformance.browser.session import DEFAULT_CHROMIUM
from mock_llm import build_settings, serve_mock

from ..support.deadlines import DEADLINE_S
from ..support.journal import Entry, settled_journal_sync
from ..support.servers import TEST_FLOWS, app_settings, serve_app

CHROMIUM = Path(DEFAULT_CHROMIUM)
ARTIFACTS = Path(__file__).parents[2] / "test-results"
TIMEOUT_MS = int(DEADLINE_S * 1000)
# Every wait is on the shared deadline, Playwright's `expect` included: its own default (5 s)
# failed a char-by-char stream under the gate's load (the "Split markup" example, a flake).
expect.set_options(timeout=TIMEOUT_MS)
SIZES: dict[str, ViewportSize] = {
    "desktop": {"width": 1280, "height": 800},
    "phone": {"width": 390, "height": 844},
}
"""The screens the layout and the accessibility audit are checked on."""


@dataclass(frozen=True)
class Stack:
    app_url: str
    mock_url: str

    def journal(self, key: str, count: int = 1) -> list[Entry]:
        """The KEY's mock requests once at least `count` have all finished."""
        return settled_journal_sync(self.mock_url, key, count)

    def history(self) -> list[dict[str, Any]]:
        response = httpx.get(
            f"{self.app_url}/api/history", params={"limit": 200}, timeout=DEADLINE_S
        )
        return response.json()["turns"]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with serve_mock(build_settings((TEST_FLOWS,))) as mock_url:
        # As `python -m app` runs its embedded demo: the page shows the demo banner.
        settings = replace(
            app_settings(mock_url, tmp_path_factory.mktemp("e2e-data")),
            embedded_mock_url=mock_url,
        )
        with serve_app(settings) as app_url:
            yield Stack(app_url, mock_url)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh (validate.sh does)")
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": [
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            # Every name under .test resolves to loopback, as an attacker's name does once
            # rebound (DNS rebinding): test_other_sites.py's pages live there.
            "--host-resolver-rules=MAP *.test 127.0.0.1",
            # Chromium's own Local Network Access checks would refuse these pages' requests
            # before they reach us; Firefox and Safari have none: the app must refuse them.
            "--disable-features=PrivateNetworkAccessSendPreflights,"
            "PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests,"
            "LocalNetworkAccessChecks",
        ],
    }


@pytest.fixture(scope="session")
def base_url(stack: Stack) -> str:
    return stack.app_url


@pytest.fixture(scope="session")
def shared_context(
    browser: Browser, browser_context_args: dict[str, Any]
) -> Iterator[BrowserContext]:
    """The worker's one browser context, for the tabs its tests open."""
    context = browser.new_context(**browser_context_args)
    yield context
    context.close()


@pytest.fixture
def tab(shared_context: BrowserContext) -> Iterator[Page]:
    """A new tab for this test; every tab the test opened is closed after it."""
    before = set(shared_context.pages)
    page = shared_context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    for opened in set(shared_context.pages) - before:
        opened.close()


@dataclass
class ChatTab:
    """The worker's tab on the app, loaded afresh for each test that asks for `chat`."""

    context: BrowserContext
    url: str
    page: Page | None = None

    def fresh(self) -> Page:
        """The tab with the app loaded anew and a new conversation, as a new tab has."""
        if self.page is None:
            self.page = self.context.new_page()
            self.page.set_default_timeout(TIMEOUT_MS)
        else:
            self.page.evaluate("() => sessionStorage.clear()")
        self.page.goto(self.url)
        return self.page

    def discard(self) -> None:
        if self.page is not None:
            self.page.close()
            self.page = None


@pytest.fixture(scope="session")
def chat_tab(shared_context: BrowserContext, stack: Stack) -> ChatTab:
    return ChatTab(shared_context, stack.app_url + "/")


@pytest.fixture
def chat(chat_tab: ChatTab, request: pytest.FixtureRequest) -> Iterator[Page]:
    """The app's page, loaded afresh: the worker's one tab, reloaded with a new conversation.

    A load is what a test needs of a new page here: the page keeps its conversation in
    sessionStorage (cleared first) and nothing else between loads. What the test set on
    the tab itself is undone after it (routes, the screen size, the pointer); a test that
    adds other handlers to the tab (`page.on`, init scripts) takes a `tab` of its own
    instead. After a test that failed, the next one gets a new tab. (A new tab and its
    load cost about 0.6 CPU-seconds, a load in the same tab about 0.2.)"""
    page = chat_tab.fresh()
    size = page.viewport_size
    context = page.context
    before = set(context.pages)
    yield page
    for opened in set(context.pages) - before:
        opened.close()
    report = getattr(request.node, "rep_call", None)
    if report is None or report.failed:
        chat_tab.discard()
        return
    page.unroute_all()
    if page.viewport_size != size and size is not None:
        page.set_viewport_size(size)
    page.mouse.move(0, 0)  # no element of the next load starts under the pointer


@dataclass
class Shots:
    """Screenshots of a test's page states, kept only if the test fails."""

    page: Page
    taken: list[tuple[str, bytes]] = field(default_factory=list[tuple[str, bytes]])

    def take(self, state: str) -> None:
        self.taken.append((state, self.page.screenshot(full_page=True)))


@pytest.fixture
def shots(chat: Page, request: pytest.FixtureRequest) -> Generator[Shots]:
    recorder = Shots(chat)
    yield recorder
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        folder = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.nodeid)
        folder.mkdir(parents=True, exist_ok=True)
        for index, (state, png) in enumerate([*recorder.taken, ("at-failure", chat.screenshot())]):
            (folder / f"{index:02d}-{state}.png").write_bytes(png)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report
