"""Drive a target's chat page as a person does, with every DOM change recorded.

`ChatPage` opens the page with the kit's recorder installed first (an init script, so it
sees everything from before the page's own scripts), runs the profile's set-up, and asks
questions: type, send, wait for the turn to finish, read answer, error and thinking.
`recorded()` is every text the page showed; `prove_live()` the recorder's positive control.
The parts of a turn are modules of their own: the composer (composer.py), which message is
the turn's (turn_message.py), when it has finished and its error (turn_end.py).

Deliberate choices:
- Nothing between browser and app is intercepted (a fulfilling route would buffer the
  stream); the app's turn id is read from response headers as they pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from playwright.sync_api import Locator, Page, Response, WebSocket

from conformance.browser.composer import send_typed, type_question, unsent
from conformance.browser.recording import DomRecording
from conformance.browser.scripts import script
from conformance.browser.setup_steps import run_page_step
from conformance.browser.turn_end import done_rule_text, error_of, mark_errors, wait_finished
from conformance.browser.turn_message import (
    Found,
    NoTurnMessage,
    TurnQuery,
    await_message,
    find,
    no_message,
    query_for,
)
from conformance.profiles.model import Profile

CLEAR_SESSION_STORAGE_JS = script("clear_session_storage")
TurnState = Literal["done", "error"]


@dataclass(frozen=True)
class TurnView:
    """What the page showed for one question once it finished."""

    state: TurnState
    answer: str
    error: str
    thinking: str
    turn_id: str | None  # the app's own id for the turn, from the response header, if any
    has_message: bool = True  # False: the turn ended at an error outside any message, alone

    def no_message_text(self) -> str:
        """Why the turn has no answer, for a clause's message ('' when it has a message)."""
        if self.has_message:
            return ""
        return (
            f"the page showed no message: the turn ended at an error outside every message"
            f" ({self.error!r}), and no assistant message came"
        )


class ChatPage:
    def __init__(self, page: Page, profile: Profile, app_url: str, timeout_ms: float) -> None:
        self.page = page
        self.profile = profile
        self.app_url = app_url
        self._turn_ids: list[str] = []
        self.timeout_ms = timeout_ms
        page.set_default_timeout(timeout_ms)
        self.recording = DomRecording(page)
        page.on("response", self._note_turn_id)
        if profile.log.turn_id_frame is not None:
            page.on("websocket", self._watch_socket)

    def _note_turn_id(self, response: Response) -> None:
        header = self.profile.log.turn_id_header
        if header is not None:
            value = response.headers.get(header.lower())
            if value:
                self._turn_ids.append(value)

    def _watch_socket(self, socket: WebSocket) -> None:
        socket.on("framereceived", self._note_frame)

    def _note_frame(self, payload: str | bytes) -> None:
        pattern = self.profile.log.frame_pattern()
        text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
        found = pattern.search(text) if pattern is not None else None
        if found is not None and found[1] not in self._turn_ids:
            self._turn_ids.append(found[1])

    def open(self) -> None:
        """Load the chat page afresh (also on a page a previous test used), as a new tab
        would, and run set-up.

        The tab's sessionStorage is emptied first: a page that keeps its tab's conversation
        there (the reference page does) would show an earlier play's answers again, and
        NEVER judges everything a play's page shows. A new tab would do the same, but opening
        one costs about a second per play here (a new renderer), the whole run 15 s more.
        """
        self.recording.restart()
        self.page.evaluate(CLEAR_SESSION_STORAGE_JS)
        self.page.goto(self.app_url)
        for step in self.profile.setup:
            run_page_step(self.page, step)
        self.page.locator(self.profile.selectors.input).first.wait_for(state="visible")

    # --- asking ------------------------------------------------------------------------

    def send(self, question: str) -> Locator:
        """Type and send `question`; the turn's assistant message (attached, maybe streaming),
        as a locator by its place among the page's messages (never a held element).
        NoTurnMessage when the turn ended at an outside error with no message."""
        turn, found = self._send(question)
        if not found.found:
            raise NoTurnMessage(
                f"the turn ended at an error outside every message ({found.error!r}), and the"
                f" page showed no assistant message ({turn.message})"
            )
        return self.page.locator(turn.message).nth(found.index)

    def ask(self, question: str) -> TurnView:
        """Type and send `question`, wait until its turn has finished, and read it."""
        ids_before = len(self._turn_ids)
        turn, sent = self._send(question)
        if not sent.found:  # ended at an outside error: no message to wait on
            turn_id = self._first_turn_id(ids_before)
            return TurnView("error", "", sent.error, "", turn_id, has_message=False)
        ended_at = self.wait_finished(self.page.locator(turn.message).nth(sent.index))
        found = find(self.page, turn)  # found again: the page may have redrawn it meanwhile
        message = self.page.locator(turn.message).nth(found.index) if found.found else None
        return self.view(message, self._first_turn_id(ids_before), ended_at)

    def _first_turn_id(self, ids_before: int) -> str | None:
        """The app's id of the turn whose ids came after the first `ids_before`, if any."""
        return next(iter(self._turn_ids[ids_before:]), None)

    def _send(self, question: str) -> tuple[TurnQuery, Found]:
        """Type and send `question`; the turn's query and the look that found its message,
        or its error outside every message with no message (QuestionNotSent, NoTurnMessage
        when neither ever shows)."""
        box = type_question(self.page, self.profile, question)
        # Counted once the box took the question: fill() waits until the box is enabled, and
        # a page that puts earlier turns back after a reload enables it once they are there.
        turn = query_for(self.page, self.profile, question)
        mark_errors(self.page, self.profile.selectors)
        send_typed(self.page, self.profile, box)
        found = await_message(self.page, turn, self.timeout_ms, self._outside_error)
        if not found.found and not found.error:
            waited = f"{self.timeout_ms / 1000:g} s"
            needle = turn.key or turn.question.strip()
            raise unsent(self.page, self.profile, needle, waited) or no_message(turn, found, waited)
        return turn, found

    def _outside_error(self) -> str:
        """The new turn's error outside every message ('' for none yet)."""
        return error_of(self.page, self.profile.selectors, None)

    def wait_finished(self, message: Locator) -> str:
        """Wait until the turn of `message` has finished (turn_end.wait_finished); the error
        that ended it ('' for the done rule)."""
        return wait_finished(self.page, self.profile, message, self.timeout_ms)

    def done_rule_text(self) -> str:
        """The profile's done rule in words, for a message."""
        return done_rule_text(self.profile.done)

    def view(self, message: Locator | None, turn_id: str | None, ended_at: str = "") -> TurnView:
        """What the turn showed; `message` None: the page no longer shows the turn's message
        (its error may still show on the page). `ended_at`: the error that ended the turn,
        kept where the page took it away since (a toast that hides itself)."""
        selectors = self.profile.selectors
        error_text = error_of(self.page, selectors, message) or ended_at
        if message is None:
            return TurnView("error" if error_text else "done", "", error_text, "", turn_id)
        thinking = ""
        if selectors.thinking is not None:
            thinking = _first(message.locator(selectors.thinking).all_text_contents())
        return TurnView(
            state="error" if error_text else "done",
            answer=_first(message.locator(selectors.answer).all_text_contents()),
            error=error_text,
            thinking=thinking,
            turn_id=turn_id,
        )

    def stop(self, *, trial: bool = False) -> None:
        """Click the stop control; with `trial`, only wait until it can be clicked
        (visible, stable, enabled, not covered), so that a click timed just after is
        timed from its own dispatch, not from Playwright's wait for the page (two
        animation frames at least, far more on a loaded machine)."""
        stop = self.profile.selectors.stop
        if stop is None:
            raise RuntimeError("the profile declares no stop control")
        self.page.locator(stop).first.click(trial=trial)

    # --- the recorder --------------------------------------------------------------------

    def recorded(self) -> str:
        """Everything the page has shown so far, as one text."""
        return self.recording.text()

    def prove_live(self) -> None:
        self.recording.prove_live()


def _first(texts: list[str]) -> str:
    """The first element's text of a locator's `all_text_contents()` ('' for none): one call,
    where `count()` and then `first.text_content()` were two (and the second waited for an
    element the page may have taken away since)."""
    return texts[0] if texts else ""
