"""When ChatPage counts a turn as finished: its done rule fires, or its error shows, or
neither within the page timeout (TurnNeverFinished, one line naming the done rule in words
and the error selector). A stand-in page (no browser) whose clock moves only when the kit
waits."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from conformance.browser.chat import ChatPage
from conformance.browser.turn_end import (
    ERROR_LOOK_JS,
    MESSAGE_LOOK_JS,
    TURN_ERROR_JS,
    TurnNeverFinished,
)
from conformance.profiles.model import DEFAULT_PROFILE, DoneRule


class FakePage:
    def set_default_timeout(self, timeout: float) -> None:
        pass

    def expose_binding(self, name: str, callback: object) -> None:
        pass

    def add_init_script(self, script: str) -> None:
        pass

    def on(self, event: str, callback: object) -> None:
        pass


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (DoneRule(), "the message's data-state set and not 'streaming'"),
        (DoneRule(attribute=None, appears=".copy"), "`.copy` showing in the message"),
        (
            DoneRule(attribute=None, disappears=".typing", quiet_ms=900),
            "`.typing` hidden, then 900 ms without a DOM change",
        ),
        (DoneRule(attribute=None, quiet_ms=1500), "1500 ms without a DOM change"),
    ],
)
def test_the_done_rule_is_named_in_words(rule: DoneRule, words: str):
    profile = replace(DEFAULT_PROFILE, done=rule)
    chat = ChatPage(cast(Any, FakePage()), profile, "http://app.invalid/", 8000)
    assert chat.done_rule_text() == words


class Clock:
    """The page's clock: a wait moves it on, nothing sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class Handle:
    def __init__(self, text: str) -> None:
        self.text = text


class Elements:
    """A locator over a fixed list of visible elements, answering the kit's page functions
    as the page's scripts would: every error is this turn's, the last with text wins."""

    def __init__(self, handles: list[Handle], errors: list[Handle]) -> None:
        self.handles = handles
        self.errors = errors

    def evaluate_all(self, script: str, arg: object = None) -> object:
        if script == ERROR_LOOK_JS:
            return len(self.handles)
        assert script == TURN_ERROR_JS, script
        texts = [h.text.strip() for h in self.errors if h.text.strip()]
        return texts[-1] if texts else ""


class Message:
    """The turn's message: its data-state, as the page has it at each poll."""

    def __init__(self, states: list[str]) -> None:
        self.states = states

    def get_attribute(self, name: str) -> str:
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]

    def evaluate_all(self, script: str) -> None:
        assert script == MESSAGE_LOOK_JS, script


class PolledPage(FakePage):
    def __init__(self, clock: Clock, errors: list[Handle]) -> None:
        self.clock = clock
        self.errors = errors

    def locator(self, selector: str) -> Elements:
        return Elements(self.errors if "error" in selector else [], self.errors)

    def wait_for_timeout(self, ms: float) -> None:
        self.clock.now += ms / 1000


def polled(errors: list[Handle], monkeypatch: pytest.MonkeyPatch) -> tuple[ChatPage, Clock]:
    clock = Clock()
    monkeypatch.setattr("conformance.browser.turn_end.time.monotonic", clock.monotonic)
    page = PolledPage(clock, errors)
    return ChatPage(cast(Any, page), DEFAULT_PROFILE, "http://app.invalid/", 8000), clock


def test_a_turn_whose_error_shows_is_finished_while_its_done_rule_has_not_fired(
    monkeypatch: pytest.MonkeyPatch,
):
    chat, clock = polled([Handle("The model returned a malformed reply.")], monkeypatch)
    chat.wait_finished(cast(Any, Message(["streaming"])))
    assert clock.now == 0.0  # at the first look


def test_a_turn_ended_by_its_error_keeps_that_error_for_a_page_that_hides_it_soon(
    monkeypatch: pytest.MonkeyPatch,
):
    chat, _ = polled([Handle("The model returned a malformed reply.")], monkeypatch)
    ended_at = chat.wait_finished(cast(Any, Message(["streaming"])))
    assert ended_at == "The model returned a malformed reply."


def test_a_turn_ended_by_its_done_rule_has_no_error_to_keep(monkeypatch: pytest.MonkeyPatch):
    chat, _ = polled([], monkeypatch)
    assert chat.wait_finished(cast(Any, Message(["streaming", "done"]))) == ""


def test_a_turn_whose_done_rule_fires_is_finished(monkeypatch: pytest.MonkeyPatch):
    chat, clock = polled([], monkeypatch)
    chat.wait_finished(cast(Any, Message(["streaming", "streaming", "done"])))
    assert clock.now == pytest.approx(0.2)  # two polls on


def test_a_turn_where_neither_fires_never_finishes_within_the_page_timeout(
    monkeypatch: pytest.MonkeyPatch,
):
    chat, clock = polled([Handle("   ")], monkeypatch)  # an empty error box is no error
    with pytest.raises(TurnNeverFinished) as stalled:
        chat.wait_finished(cast(Any, Message(["streaming"])))
    assert str(stalled.value) == (
        "the turn never finished: neither the done rule (the message's data-state set and not"
        " 'streaming') nor the error selector (`[data-testid=chat-error]`) fired in 8 s"
    )
    assert 8.0 <= clock.now < 8.2
