"""Drive a target's chat page as a person does, with every DOM change recorded.

`ChatPage` opens the page with the kit's recorder installed first (an init script, so it
sees everything from before the page's own scripts), runs the profile's set-up, and asks
questions: type, send, wait for the turn to finish, read answer, error and thinking.
`recorded()` is every text the page showed; `prove_live()` the recorder's positive control.

Deliberate choices:
- Nothing between browser and app is intercepted (a fulfilling route would buffer the
  stream); the app's turn id is read from response headers as they pass.
- Every wait is bounded by the page timeout and fails with what it was waiting for.
- A turn has finished when the profile's done rule fires or the turn's error shows,
  whichever comes first: a page may leave its streaming signs (a Stop button, a typing
  indicator) up after an error, and the error is the end of that turn all the same. It
  is looked for every POLL_MS, as the done rule is, since a profile's selectors may be
  Playwright's own (`:has-text()`, `>>`), which no script in the page can evaluate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from playwright.sync_api import Locator, Page, Response, WebSocket
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from conformance.profile import Profile

RECORDER_JS = resources.files("conformance").joinpath("recorder.js").read_text(encoding="utf-8")
LIVE_MARKER = "sg-kit-recorder-is-live"
TurnState = Literal["done", "error"]
POLL_MS = 100
"""How often a turn's end (its done rule, its error) is looked for while it streams."""


class TurnNeverFinished(AssertionError):
    """Neither the profile's done rule nor the error selector fired within the page timeout."""


@dataclass(frozen=True)
class TurnView:
    """What the page showed for one question once it finished."""

    state: TurnState
    answer: str
    error: str
    thinking: str
    turn_id: str | None  # the app's own id for the turn, from the response header, if any


CLEAR_SESSION_STORAGE = "() => { try { sessionStorage.clear(); } catch { /* about:blank */ } }"
"""Empties the current document's tab storage, if it has any (about:blank has none)."""


class DomRecording:
    """Everything a page ever shows, from the kit's recorder (install before the first goto).

    Usable on its own by any Playwright suite: `DomRecording(page)`, then `text()`. A page
    reused for the next test calls `restart()` before it navigates: what the documents it
    showed so far report from then on (a late batch of the document it leaves) is dropped.
    """

    def __init__(self, page: Page) -> None:
        self._page = page
        self._chunks: list[tuple[str, str]] = []
        self._retired: set[str] = set()
        page.expose_binding("__sgKitRecord", self._record)  # pyright: ignore[reportUnknownMemberType]
        page.add_init_script(RECORDER_JS)

    def _record(self, _source: object, document: object, text: object) -> None:
        if str(document) not in self._retired:
            self._chunks.append((str(document), str(text)))

    def restart(self) -> None:
        """Forget everything recorded so far, and every document that recorded it."""
        current = self._page.evaluate(
            "() => window.__sgKit ? window.__sgKit.flush().then(() => window.__sgKit.id) : null"
        )
        self._retired.update(document for document, _ in self._chunks)
        if isinstance(current, str):
            self._retired.add(current)
        self._chunks = []

    def text(self) -> str:
        """Everything recorded so far, as one text (flushes the recorder first)."""
        self._page.evaluate("() => window.__sgKit && window.__sgKit.flush()")
        return "\n".join(text for _, text in self._chunks)

    def prove_live(self) -> None:
        """The positive control: a node added to the page must reach the recorder."""
        self._page.evaluate(
            "marker => document.body.append(Object.assign(document.createElement('i'),"
            " {hidden: true, textContent: marker}))",
            LIVE_MARKER,
        )
        if LIVE_MARKER not in self.text():
            raise AssertionError("the DOM recorder is not live: it missed the kit's own marker")


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
        self.page.evaluate(CLEAR_SESSION_STORAGE)
        self.page.goto(self.app_url)
        for step in self.profile.setup:
            target = self.page.locator(step.selector).first
            if step.action == "click_if_visible":
                if self._shows_within(target, step.within_ms):
                    target.click()
            elif step.action == "click":
                target.click()
            elif step.action == "wait_for":
                target.wait_for(state="visible")
            elif step.action == "fill":
                target.fill(step.value or "")
            else:
                target.select_option(step.value)
        self.page.locator(self.profile.selectors.input).first.wait_for(state="visible")

    @staticmethod
    def _shows_within(target: Locator, within_ms: int) -> bool:
        if within_ms == 0:
            return target.is_visible()
        try:
            target.wait_for(state="visible", timeout=within_ms)
        except PlaywrightTimeoutError:
            return False
        return True

    # --- asking ------------------------------------------------------------------------

    def send(self, question: str) -> Locator:
        """Type and send `question`; the new assistant message (attached, maybe streaming)."""
        selectors = self.profile.selectors
        messages = self.page.locator(selectors.message)
        box = self.page.locator(selectors.input).first
        box.fill(question)  # focuses the input first, a textarea or a contenteditable editor
        # Counted once the box took the question: fill() waits until the box is enabled, and
        # a page that puts earlier turns back after a reload enables it once they are there.
        before = messages.count()
        if self.profile.send_with == "enter":
            box.press("Enter")
        else:
            self.page.locator(selectors.send).first.click()
        message = messages.nth(before)
        message.wait_for(state="attached")
        return message

    def ask(self, question: str) -> TurnView:
        ids_before = len(self._turn_ids)
        message = self.send(question)
        self.wait_finished(message)
        turn_ids = self._turn_ids[ids_before:]
        return self.view(message, turn_ids[0] if turn_ids else None)

    def wait_finished(self, message: Locator) -> None:
        """Wait until the turn of `message` has finished: by the profile's done rule, or
        its error showing (inside the message, or on the page outside every message).

        The done rules: `attribute`: the message's attribute is set and no longer the
        streaming value. `appears`: the selector shows inside the turn's message (an earlier
        answer's copy button must not end this turn). `disappears`: the selector (anywhere on
        the page, a typing indicator often sits outside the message) is hidden and the DOM
        has been quiet for `quiet_ms`, so an indicator that has not shown yet does not end
        the turn. Otherwise: the DOM quiet for `quiet_ms`. TurnNeverFinished when neither
        the rule nor the error fires within the page timeout.
        """
        deadline = time.monotonic() + self.timeout_ms / 1000
        while not (self._done_now(message) or self._error_of(message)):
            if time.monotonic() >= deadline:
                raise TurnNeverFinished(
                    f"the turn never finished: neither the done rule ({self.done_rule_text()})"
                    f" nor the error selector (`{self.profile.selectors.error}`) fired in"
                    f" {self.timeout_ms / 1000:g} s"
                )
            self.page.wait_for_timeout(POLL_MS)

    def done_rule_text(self) -> str:
        """The profile's done rule in words, for a message."""
        rule = self.profile.done
        if rule.attribute is not None:
            return f"the message's {rule.attribute} set and not {rule.streaming_value!r}"
        if rule.appears is not None:
            return f"`{rule.appears}` showing in the message"
        if rule.disappears is not None:
            return f"`{rule.disappears}` hidden, then {rule.quiet_ms} ms without a DOM change"
        return f"{rule.quiet_ms} ms without a DOM change"

    def _done_now(self, message: Locator) -> bool:
        rule = self.profile.done
        if rule.attribute is not None:
            value = message.get_attribute(rule.attribute)
            return value is not None and value != rule.streaming_value
        if rule.appears is not None:
            return message.locator(rule.appears).first.is_visible()
        if rule.disappears is not None and self.page.locator(rule.disappears).last.is_visible():
            return False
        quiet: bool = self.page.evaluate(
            "quiet => window.__sgKit.quietFor() >= quiet", rule.quiet_ms
        )
        return quiet

    def view(self, message: Locator, turn_id: str | None) -> TurnView:
        selectors = self.profile.selectors
        thinking = ""
        if selectors.thinking is not None:
            shown = message.locator(selectors.thinking)
            if shown.count():
                thinking = shown.first.text_content() or ""
        answer = message.locator(selectors.answer)
        error_text = self._error_of(message)
        return TurnView(
            state="error" if error_text else "done",
            answer=(answer.first.text_content() or "") if answer.count() else "",
            error=error_text,
            thinking=thinking,
            turn_id=turn_id,
        )

    def _error_of(self, message: Locator) -> str:
        """The visible error text of this turn: inside its message, or on the page outside
        every message (an earlier answer's error is not this turn's)."""
        selectors = self.profile.selectors
        errors = self.page.locator(selectors.error).filter(visible=True)
        if not errors.count():  # the common case, one round trip
            return ""
        handles = errors.element_handles()
        mine = message.element_handle()
        others = self.page.locator(selectors.message).element_handles()
        belongs: list[bool] = self.page.evaluate(
            "([errs, msgs, mine]) => errs.map(e => mine.contains(e)"
            " || !msgs.some(m => m !== mine && m.contains(e)))",
            [handles, others, mine],
        )
        texts = [
            (handle.text_content() or "").strip()
            for handle, ok in zip(handles, belongs, strict=True)
            if ok and handle.is_visible()
        ]
        return next((text for text in reversed(texts) if text), "")

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
