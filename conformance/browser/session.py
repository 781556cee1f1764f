"""The worker's browser, its context and its chat page, reused test after test.

One context per worker keeps the page's files in the browser's cache and one page keeps its
scripts compiled: a turn then costs a navigation, not a new browser context and a cold page
load. Each play and each page-driving test still starts from a fresh document in the state
of a new tab (`ChatPage.open`: the tab's sessionStorage is emptied first), its own KEYs and
its own recording; after a failure the page is dropped and the next one gets a new page, so
a page in a bad state never decides another test. With tracing on, each play or
page-driving test is one trace chunk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Playwright

    from conformance.browser.chat import ChatPage
    from conformance.profiles.model import Profile

CHROMIUM = "/usr/lib/chromium/chromium"
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
DEFAULT_CHROMIUM = HEADLESS_SHELL if os.access(HEADLESS_SHELL, os.X_OK) else CHROMIUM
"""Debian's Chromium headless shell (package chromium-headless-shell) when it is installed,
else its full Chromium: the shell is the browser's engine without its windowed UI, what
Playwright itself runs headless, and its processes spend a third less CPU (a whole kit run:
19 CPU-s against 23-25, docs/benchmarks.md, "The gate")."""
DEFAULT_TURN_TIMEOUT_S = 60.0
"""The page timeout: the longest a turn, or any wait on the page, may take (`--turn-timeout`)."""
CHROMIUM_ARGS = (
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def launch(playwright: Playwright, chromium: str) -> Browser:
    """The kit's Chromium (Playwright's Error when it does not start)."""
    return playwright.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))


class BrowserSession:
    """The context, its chat page (opened on first use) and its trace chunks."""

    def __init__(
        self, context: BrowserContext, profile: Profile, app_url: str, timeout_s: float, trace: str
    ) -> None:
        self.context = context
        self.profile = profile
        self.app_url = app_url
        self.timeout_s = timeout_s
        self.tracing = trace != "off"
        self._chat: ChatPage | None = None
        self._chunk_open = False
        self._set_up = False
        if self.tracing:
            context.tracing.start(snapshots=True, screenshots=trace == "screenshots")

    def chat(self) -> ChatPage:
        from conformance.browser.chat import ChatPage

        if self._chat is None:
            page = self.context.new_page()
            self._chat = ChatPage(page, self.profile, self.app_url, self.timeout_s * 1000)
        return self._chat

    def set_up_once(self) -> None:
        """The profile's `[[setup_once]]` steps, the first time only (SetupFailed)."""
        from conformance.browser.setup_steps import run_once

        if not self._set_up:
            self._set_up = True
            steps = self.profile.setup_once
            if steps:
                run_once(self.context, self.chat().page, self.app_url, steps)

    def begin_chunk(self, title: str) -> bool:
        """Start a trace chunk; False (and nothing started) when tracing is off or a chunk
        is already open."""
        if not self.tracing or self._chunk_open:
            return False
        self.context.tracing.start_chunk(title=title)
        self._chunk_open = True
        return True

    def end_chunk(self, path: Path | None) -> None:
        """End the open trace chunk, written to `path` (dropped when None)."""
        self.context.tracing.stop_chunk(path=str(path) if path is not None else None)
        self._chunk_open = False

    def discard_page(self) -> None:
        if self._chat is not None:
            chat, self._chat = self._chat, None
            chat.page.close()

    def close(self) -> None:
        if self.tracing:
            self.context.tracing.stop()
        self.context.close()


def new_context(browser: Browser, profile: Profile) -> BrowserContext:
    """A browser context for the profile's page: signed in when it names a storage state."""
    storage = profile.storage_state
    return browser.new_context(storage_state=str(storage) if storage else None)
