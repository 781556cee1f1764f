"""Drive a target's chat page as a person does, with every DOM change recorded.

`ChatPage` opens the page with the kit's recorder installed first (an init script, so it
sees everything from before the page's own scripts), runs the profile's set-up, and asks
questions: type, send, wait for the turn to finish, read answer, error and thinking.
`recorded()` is every text the page showed; `prove_live()` the recorder's positive control.

Deliberate choices:
- Nothing between browser and app is intercepted (a fulfilling route would buffer the
  stream); the app's turn id is read from response headers as they pass.
- Every wait is bounded by the page timeout and fails with what it was waiting for.
- The turn's message is found by the question's KEY, not by a count (`[turn] find`,
  default `after-question`: the first assistant message after the place the page shows the
  KEY, in document order across open shadow roots; counting only where the page shows the
  KEY nowhere): a page that redraws its conversation and drops a failed turn gives the
  next answer the failed one's place. The rule runs in the page over the messages
  Playwright's selector found, so a profile's selectors keep Playwright's syntax.
- No element is held across a turn: the message is found again by the rule at each step,
  and waited on through locators, which Playwright resolves afresh at every look (a page
  that replaces its nodes while it streams leaves the first element detached).
- A turn whose message never shows while the composer still holds the question is
  `QuestionNotSent` (the page ignored Enter or the click: not ready yet), never a timeout.
- A turn has finished when the profile's done rule fires or the turn's error shows,
  whichever comes first: a page may leave its streaming signs (a Stop button, a typing
  indicator) up after an error, and the error is the end of that turn all the same. It
  is looked for every POLL_MS, as the done rule is, since a profile's selectors may be
  Playwright's own (`:has-text()`, `>>`), which no script in the page can evaluate.
- An error outside every message that already showed, with the same text, when the
  question was sent (a banner an earlier turn left up) is not the turn's.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from playwright.sync_api import ElementHandle, Locator, Page, Response, WebSocket
from playwright.sync_api import Error as PlaywrightError

from conformance.profiles.model import Profile, TurnFind
from conformance.setup_steps import run_page_step

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


@dataclass(frozen=True)
class Sighting:
    """A watched string (a marker, the flow's canary) the page showed, first time only."""

    text: str
    at_ms: float  # when the recorder saw it, ms since its document started
    screenshot: bytes | None  # the page just after (the first sighting of a recording only)


class QuestionNotSent(AssertionError):
    """The question never left the composer: the page ignored Enter (or the click)."""


class NoTurnMessage(AssertionError):
    """The question was sent, but no assistant message of its turn showed."""


KEY_IN_QUESTION = re.compile(r"\[\[mock:[^\]#]*#([^\]]+)\]\]")
"""The KEY of the question's `[[mock:FLOW#KEY]]` trigger: the turn's name on the page too."""
LOOK_AGAIN_MS = 100
"""The longest the kit waits for a DOM change before it looks for the turn's message again
(a change it cannot observe, in a closed shadow root, is still seen that late)."""

MARK_SHOWN_JS = """els => { window.__sgKitShownBefore = new WeakSet(els); return els.length; }"""
MARK_ERRORS_JS = """els => {
  window.__sgKitErrorsBefore = new Map(els.map((e) => [e, (e.textContent || "").trim()]));
}"""
"""Remembers each error element's text as the question is sent: an error the page still
shows from before (a banner, a toast) is not the new turn's, unless its text changes."""
"""Counts the messages shown before the question is sent, and remembers them (`last`)."""

NEXT_CHANGE_JS = """cap => new Promise(resolve => {
  const done = () => { observer.disconnect(); clearTimeout(timer); resolve(); };
  const observer = new MutationObserver(done);
  const timer = setTimeout(done, cap);
  observer.observe(document, {subtree: true, childList: true, characterData: true,
                              attributes: true});
})"""
"""Resolves at the page's next DOM change, or after `cap` ms."""

COMPOSER_TEXT_JS = """el => (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement)
  ? [el.value, true] : [el.innerText || el.textContent || "", false]"""
"""What the composer holds, and whether it is a form control (one a page can disable)."""

FIND_TURN_JS = r"""(messages, {find, key, before, users}) => {
  const count = messages.length;
  const byCount = {index: before < count ? before : -1, count, shown: false};
  if (find === "count" || !key) return byCount;
  if (find === "last") {
    const shown = window.__sgKitShownBefore;
    const last = messages[count - 1];
    return {index: last && !(shown && shown.has(last)) ? count - 1 : -1, count, shown: false};
  }
  // after-question: the first message after (or holding) the last place that shows the
  // question's KEY and has a message after it, in the order the page is drawn, across
  // open shadow roots.
  const pattern = new RegExp(
    "(?<![A-Za-z0-9_-])" + key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "(?![A-Za-z0-9_-])");
  const up = (node) => node.parentNode ?? node.host ?? null;
  const path = (node) => { const p = []; for (; node; node = up(node)) p.unshift(node); return p; };
  const order = (a, b) => {  // -1: a is drawn before b, 1: after, 0: one holds the other
    const pa = path(a), pb = path(b);
    let i = 0;
    while (i < pa.length && i < pb.length && pa[i] === pb[i]) i++;
    if (i === pa.length || i === pb.length) return 0;
    if (pa[i] instanceof ShadowRoot) return -1;
    if (pb[i] instanceof ShadowRoot) return 1;
    return pa[i].compareDocumentPosition(pb[i]) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1;
  };
  const anchors = [];
  if (users) {
    if (users.some((user) => !user.isConnected)) return {index: -1, count, shown: false};
    anchors.push(...users.filter((user) => pattern.test(user.textContent || "")));
  } else {
    const CODE = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "TEXTAREA"]);
    const visit = (root) => {
      const show = NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT;
      const walker = document.createTreeWalker(root, show);
      for (let node = walker.currentNode; node; node = walker.nextNode()) {
        if (node.nodeType !== Node.TEXT_NODE) {
          if (node.shadowRoot) visit(node.shadowRoot);
          continue;
        }
        const parent = node.parentElement;  // the composer's own text is not the question shown
        if (parent && (CODE.has(parent.nodeName) || parent.isContentEditable)) continue;
        if (pattern.test(node.data)) anchors.push(node);
      }
    };
    if (document.body) visit(document.body);
  }
  if (!anchors.length) return byCount;
  for (let a = anchors.length - 1; a >= 0; a--) {
    let best = -1;
    for (let i = 0; i < count; i++) {
      if (order(anchors[a], messages[i]) > 0) continue;
      if (best < 0 || order(messages[i], messages[best]) < 0) best = i;
    }
    if (best >= 0) return {index: best, count, shown: true};
  }
  return {index: -1, count, shown: true};
}"""
"""The index of the turn's message among the page's messages (-1: none yet), by `[turn]
find`, how many messages there are, and whether the page shows the question's KEY."""


TURN_ERROR_JS = """([errs, msgs, mine, strict]) => {
  if (strict && [...errs, ...msgs, ...(mine ? [mine] : [])].some((e) => !e.isConnected)) {
    return null;  // redrawn between the kit's looks: look again
  }
  const visible = (e) => {
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(e).visibility !== "hidden";
  };
  const before = window.__sgKitErrorsBefore;
  const stale = (e) => before !== undefined && before.get(e) === (e.textContent || "").trim();
  const ours = (e) => (mine !== null && mine.contains(e)) || (!stale(e)
    && !msgs.some((m) => m !== mine && m.contains(e)));
  const texts = errs.filter((e) => ours(e) && visible(e))
    .map((e) => (e.textContent || "").trim()).filter(Boolean);
  return texts.length ? texts[texts.length - 1] : "";
}"""
"""The turn's visible error text ('' for none), or null when the page redrew between looks."""
READS_PER_VIEW = 10


@dataclass(frozen=True)
class _Turn:
    """What finds one turn's message again, whatever the page redrew meanwhile."""

    find: TurnFind
    message: str
    user_message: str | None
    key: str | None
    question: str
    before: int  # messages shown before the question was sent


@dataclass(frozen=True)
class _Found:
    index: int
    count: int
    shown: bool

    @property
    def found(self) -> bool:
        return self.index >= 0


CLEAR_SESSION_STORAGE = "() => { try { sessionStorage.clear(); } catch { /* about:blank */ } }"
"""Empties the current document's tab storage, if it has any (about:blank has none)."""


class DomRecording:
    """Everything a page ever shows, from the kit's recorder (install before the first goto).

    Usable on its own by any Playwright suite: `DomRecording(page)`, then `text()`. A page
    reused for the next test calls `restart()` before it navigates: what the documents it
    showed so far report from then on (a late batch of the document it leaves) is dropped.
    `watch(needles)`, for this document and every later one: each needle's first sighting
    is kept, the first of all with a screenshot taken as soon as the recorder reports it (a
    string shown for less time than that takes may be gone from it; the recorded text still
    has it).
    """

    def __init__(self, page: Page) -> None:
        self._page = page
        self._chunks: list[tuple[str, str]] = []
        self._retired: set[str] = set()
        self.sightings: list[Sighting] = []
        self._needles: tuple[str, ...] = ()
        page.expose_binding("__sgKitRecord", self._record)  # pyright: ignore[reportUnknownMemberType]
        page.expose_binding("__sgKitWatched", self._watched)  # pyright: ignore[reportUnknownMemberType]
        page.expose_binding("__sgKitSighted", self._sighted)  # pyright: ignore[reportUnknownMemberType]
        page.add_init_script(RECORDER_JS)

    def _watched(self, _source: object) -> list[str]:
        return list(self._needles)

    def _sighted(self, _source: object, document: object, text: object, at: object) -> None:
        if str(document) in self._retired:
            return
        shot = None
        if not self.sightings:
            try:
                shot = self._page.screenshot()
            except Exception:  # a page closing or navigating: the text is the evidence
                shot = None
        at_ms = float(at) if isinstance(at, int | float) else 0.0
        self.sightings.append(Sighting(str(text), at_ms, shot))

    def watch(self, needles: tuple[str, ...]) -> None:
        """Report the first sighting of each of `needles`, in the current document and in
        every later one (a page that navigates or reloads)."""
        self._needles = needles
        self._page.evaluate("n => window.__sgKit && window.__sgKit.watch(n)", list(needles))

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
        self.sightings = []

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
            run_page_step(self.page, step)
        self.page.locator(self.profile.selectors.input).first.wait_for(state="visible")

    # --- asking ------------------------------------------------------------------------

    def send(self, question: str) -> Locator:
        """Type and send `question`; the turn's assistant message (attached, maybe streaming),
        as a locator by its place among the page's messages (never a held element)."""
        turn, index = self._send(question)
        return self.page.locator(turn.message).nth(index)

    def ask(self, question: str) -> TurnView:
        ids_before = len(self._turn_ids)
        turn, index = self._send(question)
        self.wait_finished(self.page.locator(turn.message).nth(index))
        turn_ids = self._turn_ids[ids_before:]
        found = self._find(turn)  # found again: the page may have redrawn it meanwhile
        message = self.page.locator(turn.message).nth(found.index) if found.found else None
        return self.view(message, turn_ids[0] if turn_ids else None)

    def _send(self, question: str) -> tuple[_Turn, int]:
        selectors = self.profile.selectors
        box = self.page.locator(selectors.input).first
        box.fill(question)  # focuses the input first, a textarea or a contenteditable editor
        # Counted once the box took the question: fill() waits until the box is enabled, and
        # a page that puts earlier turns back after a reload enables it once they are there.
        # The messages shown now are remembered too (`last`: a message not among them).
        before: int = self.page.locator(selectors.message).evaluate_all(MARK_SHOWN_JS)
        self.page.locator(selectors.error).evaluate_all(MARK_ERRORS_JS)
        key = KEY_IN_QUESTION.search(question)
        turn = _Turn(
            find=self.profile.turn_find,
            message=selectors.message,
            user_message=selectors.user_message,
            key=key[1] if key else None,
            question=question,
            before=before,
        )
        if self.profile.send_with == "enter":
            box.press("Enter")
        else:
            self.page.locator(selectors.send).first.click()
        return turn, self._await_message(turn)

    def _find(self, turn: _Turn) -> _Found:
        """The turn's message by the profile's rule, on the page as it is now."""
        users: list[ElementHandle] = []
        if turn.find == "after-question" and turn.user_message is not None and turn.key:
            users = self.page.locator(turn.user_message).element_handles()
        try:
            found: dict[str, Any] = self.page.locator(turn.message).evaluate_all(
                FIND_TURN_JS,
                {"find": turn.find, "key": turn.key, "before": turn.before,
                 "users": users if turn.user_message is not None else None},
            )  # fmt: skip
        finally:
            for handle in users:
                handle.dispose()
        return _Found(int(found["index"]), found["count"], found["shown"])

    def _await_message(self, turn: _Turn) -> int:
        """Wait until the turn's message shows, looking again at every DOM change; its index."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            try:
                found = self._find(turn)
                if found.found:
                    return found.index
                if time.monotonic() >= deadline:
                    raise self._no_message(turn, found)
                self.page.evaluate(NEXT_CHANGE_JS, LOOK_AGAIN_MS)
            except PlaywrightError as exc:  # a page that navigates as it sends: look again
                if "navigat" not in str(exc) or time.monotonic() >= deadline:
                    raise

    def _no_message(self, turn: _Turn, found: _Found) -> AssertionError:
        """Why no message of the turn showed: the question never left the composer, or which
        rule found nothing."""
        selectors = self.profile.selectors
        waited = f"{self.timeout_ms / 1000:g} s"
        box = self.page.locator(selectors.input).first
        held, control = box.evaluate(COMPOSER_TEXT_JS) if box.count() else ("", False)
        if (turn.key or turn.question.strip()) in str(held):
            how = "pressed Enter in it" if self.profile.send_with == "enter" else (
                f"clicked {selectors.send}"
            )  # fmt: skip
            enabled = f'"{selectors.input}:enabled" if the page enables it then, or '
            enabled = enabled if control else ""
            return QuestionNotSent(
                f"the question is still in the composer ({selectors.input}): it was never sent"
                f" (the kit {how} and waited {waited}). A page that takes text before its"
                " session is ready ignores it: add a [[setup]] step that waits until the page"
                f" is ready, wait_for = {enabled}a selector of what the page shows once ready"
                ' (docs/conformance.md, "A page that is not ready at once")'
            )
        counted = f"{turn.before} before the question, {found.count} now"
        if turn.find == "count":
            why = f'{counted}; [turn] find = "count"'
        elif turn.find == "last":
            why = '[turn] find = "last": the last message, once the page did not show it before'
        elif found.shown:
            return NoTurnMessage(
                f"the page shows the question, but no assistant message ({selectors.message})"
                f" followed it within {waited}"
            )
        elif turn.user_message is not None:
            why = f"no user message ({turn.user_message}) shows the question's KEY {turn.key}"
            why += f", so the kit counted messages: {counted}"
        else:
            why = f"the page shows the question's KEY {turn.key} nowhere outside the composer"
            why += f", so the kit counted messages: {counted}"
        return NoTurnMessage(
            f"no new assistant message ({selectors.message}) showed within {waited} ({why})"
        )

    def wait_finished(self, message: Locator) -> None:
        """Wait until the turn of `message` has finished: by the profile's done rule, or
        its error showing (inside the message, or on the page outside every message).

        The done rules: `attribute`: the message's attribute is set and no longer the
        streaming value. `appears`: the selector shows inside the turn's message (an earlier
        answer's copy button must not end this turn). `disappears`: the selector (anywhere on
        the page, a typing indicator often sits outside the message) is hidden and the DOM
        has been quiet for `quiet_ms`, so an indicator that has not shown yet does not end
        the turn. Otherwise: the DOM quiet for `quiet_ms`. TurnNeverFinished when neither
        the rule nor the error fires within the page timeout. The message is looked up
        again at every look (a page that replaces its nodes as it streams leaves no old
        element to watch).
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

    def view(self, message: Locator | None, turn_id: str | None) -> TurnView:
        """What the turn showed; `message` None: the page no longer shows the turn's message
        (its error may still show on the page)."""
        selectors = self.profile.selectors
        error_text = self._error_of(message)
        if message is None:
            return TurnView("error" if error_text else "done", "", error_text, "", turn_id)
        thinking = ""
        if selectors.thinking is not None:
            shown = message.locator(selectors.thinking)
            if shown.count():
                thinking = shown.first.text_content() or ""
        answer = message.locator(selectors.answer)
        return TurnView(
            state="error" if error_text else "done",
            answer=(answer.first.text_content() or "") if answer.count() else "",
            error=error_text,
            thinking=thinking,
            turn_id=turn_id,
        )

    def _error_of(self, message: Locator | None) -> str:
        """The visible error text of this turn: inside its message, or on the page outside
        every message (an earlier answer's error is not this turn's).

        Read again when the page redrew between the kit's looks at errors and messages
        (an element of one look detached in the next), at most READS_PER_VIEW times."""
        selectors = self.profile.selectors
        for attempt in range(READS_PER_VIEW):
            errors = self.page.locator(selectors.error).element_handles()
            if not errors:
                return ""
            mine = message.element_handles()[:1] if message is not None else []
            others = self.page.locator(selectors.message).element_handles()
            try:
                shown: str | None = self.page.evaluate(
                    TURN_ERROR_JS,
                    [errors, others, mine[0] if mine else None, attempt < READS_PER_VIEW - 1],
                )
            finally:
                for handle in (*errors, *mine, *others):
                    handle.dispose()
            if shown is not None:
                return shown
        return ""

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
