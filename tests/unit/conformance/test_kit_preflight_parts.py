"""The preflight's proof of the page's declared parts, against a stand-in page and mock.

`check_parts` plays one turn per declared part (the chat page here is a fake that answers
as a page with or without each part would) and ends the run with one line naming every
part that is missing, or lets it go on. No browser, app or socket takes part.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from conformance.browser.chat import TurnView
from conformance.browser.turn_end import TurnNeverFinished
from conformance.oracle.target import Target
from conformance.profiles.model import DEFAULT_PROFILE, Profile
from conformance.run.preflight import ERROR_FLOW, PREFLIGHT_FLOWS, check_parts
from mock_llm.client import MockClientError

ANSWER = TurnView("done", "Backups run nightly.", "", "", None)
"""The wiring turn's view on a page that has its answer."""


@dataclass
class Record:
    body: dict[str, Any]


@dataclass
class FakeUpstream:
    tools: bool = True
    added: list[str] = field(default_factory=list[str])

    def requests(self, key: str) -> list[Record]:
        body: dict[str, Any] = {"messages": []}
        if self.tools:
            body["tools"] = [{"type": "function", "function": {"name": "read"}}]
        return [Record(body)]

    def add_flows(self, text: str) -> None:
        self.added.append(text)


@dataclass
class FakeChat:
    """A page with the parts it is told it has; `asked` is every question, in order."""

    thinking: bool = True
    has_stop: bool = True
    error: bool = True
    error_turn_ends: bool = True
    asked: list[str] = field(default_factory=list[str])

    def open(self) -> None:
        pass

    def ask(self, question: str) -> TurnView:
        self.asked.append(question)
        if ERROR_FLOW in question:
            if not self.error_turn_ends:
                raise TurnNeverFinished("the turn never finished: neither ...\nmore")
            return replace(ANSWER, state="error" if self.error else "done", answer="",
                           error="The model service failed." if self.error else "")  # fmt: skip
        return replace(ANSWER, thinking="I think." if self.thinking else "")

    def send(self, question: str) -> None:
        self.asked.append(question)

    def stop(self, *, trial: bool = False) -> None:
        if not self.has_stop:
            raise PlaywrightTimeoutError("Timeout 8000ms exceeded.\n=== logs ===")


def target(profile: Profile = DEFAULT_PROFILE, upstream: FakeUpstream | None = None) -> Target:
    return Target(
        app_url="http://app.invalid/", mock_url="http://mock.invalid", log_file=None,
        profile=profile, upstream=cast(Any, upstream or FakeUpstream()), timeout_s=8.0,
        artifacts=Path("artifacts"), stop_within_ms=1000.0,
    )  # fmt: skip


def declaring(*capabilities: str) -> Profile:
    return replace(DEFAULT_PROFILE, capabilities=frozenset(cast(Any, capabilities)))


def stopped(chat: FakeChat, on: Target, wiring: TurnView = ANSWER) -> str:
    """The preflight's line (without its prefix); it must end the run."""
    with pytest.raises(pytest.exit.Exception) as ended:
        check_parts(on, cast(Any, chat), wiring, "wiring", lambda part: f"k-{part}")
    assert ended.value.returncode == 3
    message = str(ended.value.msg)
    assert message.startswith("conformance preflight: ")
    assert "\n" not in message
    return message.removeprefix("conformance preflight: ")


def test_a_page_with_every_declared_part_passes_with_one_turn_per_part():
    chat = FakeChat()
    check_parts(target(), cast(Any, chat), ANSWER, "wiring", lambda part: f"k-{part}")
    assert [q.split("[[mock:")[1] for q in chat.asked] == [
        "thinking#k-thinking]]",
        "slow#k-stop]]",
        f"{ERROR_FLOW}#k-error]]",
    ]


def test_the_error_flow_is_added_to_the_mock_before_its_turn():
    upstream = FakeUpstream()
    check_parts(target(upstream=upstream), cast(Any, FakeChat()), ANSWER, "w", lambda p: p)
    assert upstream.added == [PREFLIGHT_FLOWS]
    assert "status: 500" in PREFLIGHT_FLOWS


def test_a_missing_thinking_display_is_named_with_its_selector_and_key():
    assert stopped(FakeChat(thinking=False), target()) == (
        "the page has no element matching `[data-testid=thinking]` with text in a turn whose"
        " model thought (flow thinking): declare `capabilities.thinking = false` or fix"
        " `selectors.thinking`"
    )


def test_a_stop_control_that_never_shows_is_named_with_the_wait():
    assert stopped(FakeChat(has_stop=False), target()) == (
        "the page has no element matching `[data-testid=chat-stop]` that could be clicked"
        " within 8 s while a slow answer streamed (flow slow): declare"
        " `capabilities.stop = false` or fix `selectors.stop`"
    )


def test_an_app_that_offers_no_tools_is_named_when_tools_are_declared():
    assert stopped(FakeChat(), target(upstream=FakeUpstream(tools=False))) == (
        "the profile declares `capabilities.tools`, but the app offered the model no tools in"
        " a clean turn (its request carried no `tools`): declare `capabilities.tools = false`,"
        " or turn the app's tools on"
    )


def test_an_error_turn_that_shows_nothing_through_the_error_selector_is_named():
    assert stopped(FakeChat(error=False), target()) == (
        "the page has no element matching `[data-testid=chat-error]` with text in a turn whose"
        f" model failed (HTTP 500 on every request, flow {ERROR_FLOW}): fix `selectors.error`"
    )


def test_an_error_turn_that_never_finishes_is_named_in_one_line():
    assert stopped(FakeChat(error_turn_ends=False), target()) == (
        f"a turn whose model failed (HTTP 500 on every request, flow {ERROR_FLOW}) did not"
        " finish: TurnNeverFinished: the turn never finished: neither ...: fix"
        " `selectors.error` or the done rule"
    )


def test_a_clean_turn_with_no_answer_text_names_the_answer_selector():
    empty = replace(ANSWER, answer="  ")
    assert stopped(FakeChat(), target(), wiring=empty) == (
        "the page has no element matching `[data-testid=answer]` with text in the answer to a"
        " clean turn: fix `selectors.answer` (inside `selectors.message`)"
    )


def test_a_clean_turn_in_the_error_state_names_the_error_selector():
    failed = replace(ANSWER, state="error", answer="", error="Offline banner")
    assert stopped(FakeChat(), target(), wiring=failed) == (
        "a clean turn ended in the error state, showing 'Offline banner' through"
        " `[data-testid=chat-error]`: fix `selectors.error` if that is not an error"
    )


def test_every_missing_part_is_named_in_the_one_line():
    message = stopped(FakeChat(thinking=False, has_stop=False), target())
    parts = message.split("; ")
    assert len(parts) == 2
    assert "`selectors.thinking`" in parts[0]
    assert "`selectors.stop`" in parts[1]


def test_an_undeclared_part_is_not_looked_for():
    chat = FakeChat(thinking=False, has_stop=False)
    bare = target(declaring(), upstream=FakeUpstream(tools=False))
    check_parts(bare, cast(Any, chat), ANSWER, "wiring", lambda part: part)
    assert [q for q in chat.asked if ERROR_FLOW not in q] == []


def test_a_thinking_turn_that_does_not_finish_is_named_in_one_line():
    class Stalls(FakeChat):
        def ask(self, question: str) -> TurnView:
            if "thinking#" in question:
                raise TurnNeverFinished("the turn never finished: neither ...")
            return super().ask(question)

    assert stopped(Stalls(), target()) == (
        "a turn whose model thought (flow thinking) did not finish: TurnNeverFinished: the turn"
        " never finished: neither ..."
    )


def test_a_slow_turn_that_breaks_otherwise_is_named_with_its_error():
    class Breaks(FakeChat):
        def send(self, question: str) -> None:
            raise RuntimeError("the page crashed")

    assert stopped(Breaks(), target()) == (
        "a slow answer's turn (flow slow) broke: RuntimeError: the page crashed"
    )


def test_a_mock_that_refuses_the_error_flow_is_named():
    class Refuses(FakeUpstream):
        def add_flows(self, text: str) -> None:
            raise MockClientError(409, "another definition", "flow_conflict")

    assert stopped(FakeChat(), target(upstream=Refuses())) == (
        f"the mock refused the preflight's flow {ERROR_FLOW}: another definition"
    )
