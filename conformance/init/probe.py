"""init's hold on the page: its page functions (js/discover.js) called with element
handles, and a poll that says what it was waiting for when it gives up.

Deliberate choices:
- What init runs in the page is in `js/`: discover.js, evaluated in every document, holds
  its functions; js/call.js calls one of them by name, so no JavaScript is built in Python.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from conformance.browser.scripts import script
from conformance.profiles.writer import FoundSetup
from mock_llm.client import MockClient

if TYPE_CHECKING:
    from playwright.sync_api import ElementHandle, JSHandle, Page

DISCOVER_JS = script("discover", "conformance.init")
CALL_JS = script("call", "conformance.init")
UNCHOSEN_CHOICE_JS = script("unchosen_choice", "conformance.init")
POLL_S = 0.1
T = TypeVar("T")


class InitFailed(RuntimeError):
    """init cannot go on; the message says what it saw and what to do."""


@dataclass
class Probe:
    """The page, the mock and what init found so far."""

    page: Page
    mock: MockClient
    url: str
    timeout_s: float
    say: Callable[[str], None]
    setup: list[FoundSetup] = field(default_factory=list[FoundSetup])
    notes: dict[str, str] = field(default_factory=dict[str, str])
    streaming_buttons: list[str] = field(default_factory=list[str])  # in a streaming message

    def js(self, name: str, *args: Any) -> Any:
        """The value of init's page function `name` (discover.js) called with `args`."""
        return self.page.evaluate(CALL_JS, [name, list(args)])

    def value(self, name: str, *args: Any) -> JSHandle:
        """What init's page function `name` returns, as a handle in the page."""
        return self.page.evaluate_handle(CALL_JS, [name, list(args)])

    def handle(self, name: str, *args: Any) -> ElementHandle | None:
        """The element init's page function `name` returns (None: it found none)."""
        found = self.value(name, *args)
        element = found.as_element()
        if element is None:
            found.dispose()
        return element

    def until(self, what: str, check: Callable[[], T | None], within_s: float | None = None) -> T:
        """`check()`'s first answer that is not None, polled; InitFailed naming `what`."""
        deadline = time.monotonic() + (within_s if within_s is not None else self.timeout_s)
        while True:
            got = check()
            if got is not None:
                return got
            if time.monotonic() > deadline:
                raise InitFailed(f"{what} within {within_s or self.timeout_s:g} s")
            self.page.wait_for_timeout(POLL_S * 1000)
