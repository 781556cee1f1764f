"""`python -m conformance init URL --mock-url MOCK`: a first profile for a page the kit has
never met, found by using the page the way a person does.

It opens the page in the kit's browser, gets past a welcome dialog or an empty model picker
if one is in the way (and writes that down as `[[setup]]`), finds the text box, sends a
question that plays init's own flow on the mock, and watches the DOM: the element that
shows the flow's answer is the answer, the sibling of the question's bubble that holds it is
the message, a slow answer shows how a streaming message differs from a finished one (and
which new button stops it), a thinking flow finds the thinking display, and a reply that is
only markup twice finds the error display. The profile is read back with `load_profile`
before it is written; the kit's preflight then checks it against the page.

Deliberate choices:
- init's flows are its own (added to the mock at start), with texts no page shows by
  chance, so that "the element holding this text" names one element.
- What it cannot find it says, in the profile's comments and on the terminal, rather than
  guessing; `tools` comes from the journal (did the app offer tools?), `log` is left for
  the user (nothing on the page names a log line).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from conformance.browser.session import DEFAULT_CHROMIUM
from conformance.options import DEFAULT_TURN_TIMEOUT_S
from conformance.oracle.clauses import MALFORMED_REPLY
from conformance.profiles.keys import ProfileError
from conformance.profiles.loader import load_profile
from conformance.profiles.model import DoneRule, Profile, Selectors, SetupStep
from conformance.profiles.writer import Found, FoundDone, FoundSetup, render_profile
from conformance.run.questions import question
from mock_llm.client import JournalRecord, MockClient, MockClientError

if TYPE_CHECKING:
    from playwright.sync_api import ElementHandle, JSHandle, Page

DISCOVER_JS = resources.files("conformance").joinpath("discover.js").read_text(encoding="utf-8")
ANSWER = "Init probe answer: the backups of the lab run nightly at two, restore drills on Sunday."
REASONING = "Init probe reasoning: the runbook names two o'clock, so the answer is direct."
SLOW = " ".join(["Init probe slow answer, word after word, while the page streams it."] * 12)
FLOWS: dict[str, Any] = {
    "flows": {
        "sg-init-answer": {"description": "conformance init: a clean answer",
                           "steps": [{"content": ANSWER}]},
        "sg-init-slow": {"description": "conformance init: a slow answer (about 10 s)",
                         "steps": [{"content": SLOW, "delay_ms": 100}]},
        "sg-init-thinking": {"description": "conformance init: reasoning, then an answer",
                             "steps": [{"reasoning": REASONING, "content": ANSWER}]},
    }
}  # fmt: skip
"""init's own flows; the error turn plays the built-in `scaffold-repeat`."""
TYPED = "el => (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') ? el.value : el.innerText"
"""What a text box holds: a textarea's or input's value, an editor's text."""
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

    def js(self, expression: str, *args: Any) -> Any:
        """`window.__sgInit.EXPRESSION`'s value, with `args` as a, b and c."""
        return self.page.evaluate(*_call(expression, args))

    def handle(self, expression: str, *args: Any) -> ElementHandle | None:
        found: JSHandle = self.page.evaluate_handle(*_call(expression, args))
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


def _call(expression: str, args: Sequence[Any]) -> tuple[str, list[Any]]:
    """The page function calling `window.__sgInit.EXPRESSION` and its argument: `args` as
    a, b and c (None for those not given)."""
    return f"([a, b, c]) => window.__sgInit.{expression}", [*args, None, None, None][:3]


def new_key() -> str:
    return f"sginit{uuid.uuid4().hex[:10]}"


# --- the steps ------------------------------------------------------------------------------


def find_composer(probe: Probe) -> str:
    """The text box's selector, once past whatever stands in front of it."""

    def ready() -> str | None:
        blocker = probe.handle("blocking()")
        if blocker is not None:
            selector = probe.js("unique(a)", blocker) or "dialog button"
            probe.setup.append(FoundSetup("click_if_visible", selector, why="a dialog in the way"))
            probe.say(f"init: a dialog was in the way; clicked {selector}")
            blocker.click()
            return None
        chosen = probe.page.evaluate(
            "() => { const u = window.__sgInit.unchosen(); return u &&"
            " [window.__sgInit.unique(u[0]), u[1]]; }"
        )
        if chosen and chosen[0]:
            probe.setup.append(FoundSetup("select", chosen[0], chosen[1], "nothing was chosen"))
            probe.say(f"init: picked {chosen[1]!r} in {chosen[0]}, which had nothing chosen")
            probe.page.locator(chosen[0]).first.select_option(chosen[1])
            return None
        box = probe.handle("composer()")
        return None if box is None else probe.js("unique(a)", box)

    return probe.until(
        f"no text box to type a question into showed on {probe.url}: if the page needs a"
        " sign-in, save one with Playwright and pass it in the profile's [session]"
        " storage_state; then run init again with --profile",
        ready,
    )


def send(probe: Probe, composer: str, text: str, key: str) -> tuple[str, str | None]:
    """Type and send `text`; how it was sent (`click` and the button's selector, or
    `enter`), once the mock saw the question's KEY."""
    box = probe.page.locator(composer).first
    box.fill(text)
    box_handle = box.element_handle()
    button = probe.handle("sendButton(a)", box_handle)
    selector = None if button is None else probe.js("unique(a)", button)
    if button is not None and selector:
        button.click()
        how = "click"
    else:
        box.press("Enter")
        how = "enter"

    def reached() -> bool | None:
        return True if probe.mock.requests(key).requests else None

    try:
        probe.until("", reached)
    except InitFailed:
        if key in str(box.evaluate(TYPED)):
            raise InitFailed(
                f"the question is still in the text box {composer}: it was never sent"
                " (a page that is not ready ignores Enter; add a [[setup]] wait_for step)"
            ) from None
        raise InitFailed(
            f"the question left the page but never reached the mock at its KEY {key}: is the"
            " app's model server set to the mock (its OpenAI base URL ending /v1)?"
        ) from None
    return how, selector


@dataclass(frozen=True)
class Structure:
    message: str
    answer: str


def find_structure(probe: Probe, key: str) -> tuple[Structure, ElementHandle]:
    """The message and answer selectors, from the first answer; and that message."""
    user = probe.until(
        "the page does not show the question that was sent: init finds the answer's message"
        " as the question bubble's sibling",
        lambda: probe.handle("holding(a)", key),
    )
    answer = probe.until(
        "the page never showed init's answer (is the app showing the model's reply?)",
        lambda: probe.handle("holding(a, null, b)", ANSWER, user),
    )
    pair = probe.page.evaluate_handle("([a, u]) => window.__sgInit.siblings(a, u)", [answer, user])
    message = pair.evaluate_handle("p => p[0]").as_element()
    mine = pair.evaluate_handle("p => p[1]").as_element()
    assert message is not None
    assert mine is not None
    inside = probe.js("within(a, b)", message, answer)
    if inside is None:
        raise InitFailed("no selector finds the answer's text inside its message")
    selector = probe.js(
        "messageSelector(a, b, c)", message, mine, None if inside == ":scope" else inside
    )
    if selector is None:
        raise InitFailed("no selector tells the answer's message from the question's")
    return Structure(selector, inside), message


def watch_streaming(
    probe: Probe, composer: str, structure: Structure, done_message: ElementHandle
) -> tuple[FoundDone, str | None]:
    """Send the slow flow; compare its message while streaming with the finished one, and
    find a new button that stops it. Returns the done rule and the stop selector."""
    finished = probe.js("snapshot(a)", done_message)
    probe.js("markButtons()")
    key = new_key()
    send(probe, composer, question("sg-init-slow", key), key)
    messages = probe.page.locator(structure.message)
    streaming = probe.until(
        "the slow answer never started streaming",
        lambda: (
            messages.last.element_handle()
            if messages.count() >= 2 and messages.last.inner_text().strip()
            else None
        ),
    )
    during = probe.js("snapshot(a)", streaming)
    probe.streaming_buttons = list(during["buttons"])
    stop_handle = probe.handle("newStop()")
    stop = None if stop_handle is None else probe.js("unique(a)", stop_handle)
    if stop_handle is not None and stop:
        stop_handle.click()
    entries = _settled(probe, key)  # the slow answer's end: stopped, or run to its end
    if stop_handle is None or not stop:
        probe.notes["stop"] = "no new button said stop while the answer streamed"
    elif any(e.outcome == "client_disconnected" for e in entries):
        probe.notes["stop"] = "clicking it ended the stream early"
    else:
        probe.notes["stop"] = "it showed while streaming, but clicking it did not end the stream"
        stop = None
    return done_rule(finished, during, stop), stop


def _settled(probe: Probe, key: str) -> list[JournalRecord]:
    """The KEY's journal entries once its turn settled."""
    return list(
        probe.mock.requests(key, settle_ms=300, timeout_ms=int(probe.timeout_s * 1000)).requests
    )


def done_rule(finished: dict[str, Any], during: dict[str, Any], stop: str | None) -> FoundDone:
    """How a finished message differs from a streaming one. Pure."""
    done_attrs: dict[str, str] = finished["attributes"]
    live_attrs: dict[str, str] = during["attributes"]
    for name in sorted(done_attrs, key=lambda n: (not n.startswith(("data-", "aria-")), n)):
        if name in ("class", "style", "id") or done_attrs[name] == live_attrs.get(name):
            continue
        live = live_attrs.get(name)
        why = f"{name} is {live!r} while it streams, {done_attrs[name]!r} once done"
        return FoundDone("attribute", name, live or "streaming", why)
    new = [b for b in finished["buttons"] if b not in during["buttons"]]
    if new:
        return FoundDone("appears", new[0], why=f"{new[0]} shows in a message once it is done")
    if stop is not None:
        return FoundDone("disappears", stop, why="the stop control goes away once it is done")
    return FoundDone("quiet", why="nothing told done from streaming: the page going quiet does")


def provisional(found: Found) -> Profile:
    """A profile of what init found so far, to drive the page with the kit's own ChatPage."""
    selectors = Selectors(input=found.input, send=found.send or "button", message=found.message,
                          answer=found.answer, error="[data-sg-init-none]", stop=found.stop,
                          thinking=None)  # fmt: skip
    done = found.done
    rule = DoneRule(
        attribute=done.selector_or_attribute if done.kind == "attribute" else None,
        streaming_value=done.streaming_value or "streaming",
        appears=done.selector_or_attribute if done.kind == "appears" else None,
        disappears=done.selector_or_attribute if done.kind == "disappears" else None,
    )
    setup = tuple(SetupStep(s.action, s.selector, s.value, 2000 if s.value is None else 0)
                  for s in found.setup)  # fmt: skip
    return Profile(name="init", selectors=selectors, send_with=found.send_with, done=rule,
                   setup=setup)  # fmt: skip


def find_thinking_and_error(probe: Probe, found: Found) -> Found:
    """The thinking display (init's thinking flow) and the error display (`scaffold-repeat`,
    which ends a guarded turn in the malformed-reply error)."""
    from conformance.browser.chat import ChatPage

    chat = ChatPage(probe.page, provisional(found), probe.url, probe.timeout_s * 1000)
    chat.open()
    key = new_key()
    message = chat.send(question("sg-init-thinking", key))
    chat.wait_finished(message)
    handle = message.element_handle()
    thought = probe.handle("holding(a, b)", REASONING, handle)
    thinking = None if thought is None else probe.js("within(a, b)", handle, thought)
    if thinking is None:
        probe.notes["thinking"] = "the reasoning's text was not in the answer's message"
    key = new_key()
    message = chat.send(question("scaffold-repeat", key))
    try:  # not the done rule: a failed turn may end without what ends a good one
        shown = probe.until("", lambda: probe.handle("holding(a)", MALFORMED_REPLY))
    except InitFailed:
        shown = None
        probe.notes["error"] = (
            "a reply that was only markup, twice, showed no malformed-reply error (G3 fails"
            " until the page shows one)"
        )
    _settled(probe, key)
    error = None if shown is None else probe.js("general(a)", shown)
    done = found.done
    if shown is not None and done.kind == "appears" and done.selector_or_attribute:
        done = also_on_error(probe, done, done.selector_or_attribute, message.element_handle())
    return replace(found, thinking=thinking, error=error, done=done)


def also_on_error(probe: Probe, done: FoundDone, appears: str, message: ElementHandle) -> FoundDone:
    """An `appears` rule that also ends a turn that failed: a failed answer often gets
    another button (Try again, not Copy)."""
    after = probe.js("snapshot(a)", message)
    if appears in after["buttons"]:
        return done
    other = next((b for b in after["buttons"] if b not in probe.streaming_buttons), None)
    if other is None:
        probe.notes["done"] = f"a failed turn never showed {appears}: its end is not seen"
        return done
    either = f":is({appears}, {other})"
    why = f"{appears} shows once an answer is done, {other} once a turn failed"
    return FoundDone("appears", either, why=why)


SIDE_CALL_PREFIX_CHARS = 40
REGEX_SPECIAL = re.compile(r"[.^$*+?{}\[\]\\|()]")


def side_call_rules(bodies: Sequence[object]) -> tuple[str, ...]:
    """Rules for the requests after a one-request turn's first: each one's system message,
    else its last user message, by the start of its first line. Pure."""
    rules: list[str] = []
    for body in bodies[1:]:
        messages = cast(dict[str, Any], body).get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list):
            continue
        texts: list[tuple[object, object]] = [
            (cast(dict[str, object], m).get("role"), cast(dict[str, object], m).get("content"))
            for m in cast(list[object], messages)
            if isinstance(m, dict)
        ]
        system = [c for r, c in texts if r == "system" and isinstance(c, str) and c.strip()]
        users = [c for r, c in texts if r == "user" and isinstance(c, str) and c.strip()]
        text = system[0] if system else users[-1] if users else ""
        start = text.strip().splitlines()[0][:SIDE_CALL_PREFIX_CHARS] if text.strip() else ""
        rule = "^" + REGEX_SPECIAL.sub(r"\\\g<0>", start)
        if start and rule not in rules:
            rules.append(rule)
    return tuple(rules)


def offered_tools(probe: Probe, key: str) -> bool:
    bodies = [e.body for e in probe.mock.requests(key).requests]
    return any(bool(cast(dict[str, Any], b).get("tools")) for b in bodies if isinstance(b, dict))


def discover(probe: Probe) -> Found:
    """Every step, in order (see the module docstring)."""
    probe.page.add_init_script(DISCOVER_JS)
    probe.page.goto(probe.url)
    composer = find_composer(probe)
    probe.say(f"init: the text box is {composer}")
    key = new_key()
    how, button = send(probe, composer, question("sg-init-answer", key), key)
    probe.say(f"init: sent with {how}" + (f" on {button}" if button else ""))
    structure, message = find_structure(probe, key)
    probe.say(f"init: each answer is {structure.message}, its text {structure.answer}")
    done, stop = watch_streaming(probe, composer, structure, message)
    probe.say(f"init: a turn is done when {done.why}")
    found = Found(
        url=probe.url, input=composer, send_with="click" if how == "click" else "enter",
        send=button, message=structure.message, answer=structure.answer, done=done,
        stop=stop, tools=offered_tools(probe, key), setup=tuple(probe.setup), notes=probe.notes,
        side_calls=side_call_rules([e.body for e in probe.mock.requests(key).requests]),
    )  # fmt: skip
    return find_thinking_and_error(probe, found)


# --- the command ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance init",
        description="Write a first kit profile for a chat page wired to the mock.",
    )
    parser.add_argument("url", help="the chat page (the app's model server must be the mock)")
    parser.add_argument("--mock-url", required=True, help="the mock_llm the app talks to")
    parser.add_argument("--out", type=Path, default=Path("profile.toml"), help="profile.toml")
    parser.add_argument("--name", default=None, help="the profile's name (the file's stem)")
    parser.add_argument("--chromium-path", default=DEFAULT_CHROMIUM)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TURN_TIMEOUT_S / 2,
                        help="seconds to wait for each thing to show (30)")  # fmt: skip
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.force:
        parser.error(f"{args.out} exists (pass --force to overwrite it)")
    try:
        text = run(args)
    except InitFailed as exc:
        print(f"conformance init: {exc}", file=sys.stderr)
        return 1
    args.out.write_text(text, encoding="utf-8")
    print(f"conformance init: wrote {args.out}; check it with\n  pytest conformance"
          f" --app-url {args.url} --mock-url {args.mock_url} --profile {args.out}")  # fmt: skip
    return 0


def run(args: argparse.Namespace) -> str:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    if not Path(args.chromium_path).exists():
        raise InitFailed(f"no browser at {args.chromium_path} (pass --chromium-path)")
    with MockClient(args.mock_url.rstrip("/"), timeout=args.timeout) as mock:
        try:
            mock.add_flows(FLOWS)
        except (MockClientError, OSError) as exc:
            raise InitFailed(f"the mock at {args.mock_url} cannot be reached: {exc}") from exc
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium_path)
            try:
                page = browser.new_page()
                page.set_default_timeout(args.timeout * 1000)
                probe = Probe(page, mock, args.url, args.timeout, lambda line: print(line))
                found = discover(probe)
            except PlaywrightError as exc:
                raise InitFailed(f"the page stopped init: {exc.message.splitlines()[0]}") from exc
            finally:
                browser.close()
    name = args.name or args.out.stem
    text = render_profile(found, name)
    check = args.out.with_name(f".{args.out.name}.check")
    try:
        check.write_text(text, encoding="utf-8")
        load_profile(check)
    except ProfileError as exc:  # a bug of init's own: say so rather than write a bad file
        raise InitFailed(f"the profile init wrote does not load: {exc}") from exc
    finally:
        check.unlink(missing_ok=True)
    return text
