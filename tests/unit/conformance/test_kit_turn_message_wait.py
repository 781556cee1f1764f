"""How long the kit waits for a turn's assistant message: until the message shows, or until
the turn's error shows outside every message (a toast: the page may never add a message for a
failed turn), or until the page timeout. A stand-in page (no browser) whose clock moves only
when the kit waits."""

from __future__ import annotations

from typing import Any, cast

import pytest

from conformance.browser.turn_message import (
    FIND_TURN_JS,
    NEXT_CHANGE_JS,
    TurnQuery,
    await_message,
)

TURN = TurnQuery(find="count", message=".bot", user_message=None, key=None, question="q", before=0)


class Messages:
    def __init__(self, page: StandIn) -> None:
        self.page = page

    def evaluate_all(self, script: str, arg: object = None) -> dict[str, object]:
        assert script == FIND_TURN_JS, script
        shown = self.page.looks >= self.page.message_at
        self.page.looks += 1
        return {"index": 0 if shown else -1, "count": 1 if shown else 0, "shown": True}


class StandIn:
    """A page whose message shows at look `message_at` (counting from 0)."""

    def __init__(self, message_at: int) -> None:
        self.message_at = message_at
        self.looks = 0
        self.now = 0.0

    def locator(self, selector: str) -> Messages:
        return Messages(self)

    def evaluate(self, script: str, arg: object) -> None:
        assert script == NEXT_CHANGE_JS, script
        self.now += 0.1


def waited(page: StandIn, errors: list[str], monkeypatch: pytest.MonkeyPatch, timeout_ms: float):
    monkeypatch.setattr("conformance.browser.turn_message.time.monotonic", lambda: page.now)
    return await_message(cast(Any, page), TURN, timeout_ms, lambda: errors.pop(0) if errors else "")


def test_the_wait_ends_at_the_turns_message(monkeypatch: pytest.MonkeyPatch):
    found = waited(StandIn(message_at=2), [], monkeypatch, 8000)
    assert (found.found, found.error) == (True, "")


def test_the_wait_ends_at_an_error_outside_every_message_when_no_message_came(
    monkeypatch: pytest.MonkeyPatch,
):
    page = StandIn(message_at=1_000)
    found = waited(page, ["", "Error: the model failed"], monkeypatch, 8000)
    assert (found.found, found.error) == (False, "Error: the model failed")
    assert page.now == pytest.approx(0.1)  # at the second look, not the page timeout


def test_a_message_that_came_with_the_outside_error_is_still_the_turns(
    monkeypatch: pytest.MonkeyPatch,
):
    page = StandIn(message_at=1)  # shows by the look just after the error's
    found = waited(page, ["Error: the model failed"], monkeypatch, 8000)
    assert (found.found, found.error) == (True, "")


def test_with_neither_the_wait_ends_at_the_page_timeout(monkeypatch: pytest.MonkeyPatch):
    page = StandIn(message_at=1_000)
    found = waited(page, [], monkeypatch, 1000)
    assert (found.found, found.error) == (False, "")
    assert page.now >= 1.0
