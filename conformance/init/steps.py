"""init's steps on the page, each as a person would take it: get past what is in the way,
find the text box, send a question, find the answer and its message, watch a slow answer
stream (and stop it), then find the thinking and the error displays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from conformance.browser.chat import CLEAR_SESSION_STORAGE_JS
from conformance.browser.composer import held_text
from conformance.browser.setup_steps import shows_within
from conformance.browser.turn_message import find, query_for
from conformance.init.flows import ANSWER, REASONING, new_key
from conformance.init.probe import DISCOVER_JS, UNCHOSEN_CHOICE_JS, InitFailed, Probe
from conformance.init.rules import done_rule, provisional, side_call_rules
from conformance.oracle.clauses import MALFORMED_REPLY
from conformance.profiles.writer import DIALOG_WAIT_MS, Found, FoundDone, FoundSetup
from conformance.run.questions import question
from guardrail.json_shapes import objects
from mock_llm.client import JournalRecord

if TYPE_CHECKING:
    from playwright.sync_api import ElementHandle

    from conformance.browser.chat import ChatPage


def find_composer(probe: Probe) -> str:
    """The text box's selector, once past whatever stands in front of it."""

    def ready() -> str | None:
        blocker = probe.handle("blocking")
        if blocker is not None:
            selector = probe.js("unique", blocker) or "dialog button"
            probe.setup.append(FoundSetup("click_if_visible", selector, why="a dialog in the way"))
            probe.say(f"init: a dialog was in the way; clicked {selector}")
            blocker.click()
            return None
        chosen = probe.page.evaluate(UNCHOSEN_CHOICE_JS)
        if chosen and chosen[0]:
            probe.setup.append(FoundSetup("select", chosen[0], chosen[1], "nothing was chosen"))
            probe.say(f"init: picked {chosen[1]!r} in {chosen[0]}, which had nothing chosen")
            probe.page.locator(chosen[0]).first.select_option(chosen[1])
            return None
        box = probe.handle("composer")
        return None if box is None else probe.js("unique", box)

    return probe.until(
        f"no text box to type a question into showed on {probe.url}: if the page needs a"
        " sign-in, save one with Playwright and pass it in the profile's [session]"
        " storage_state; then run init again with --profile",
        ready,
    )


def once_or_every_load(probe: Probe) -> None:
    """Load the page afresh, as the kit does before each play (its tab storage emptied): a
    dialog init clicked that does not show again is a once step (`[[setup_once]]`: the
    browser keeps its dismissal, and no play waits DIALOG_WAIT_MS for a dialog that never
    comes); one that shows again is clicked, a step of every play. The other steps are taken
    again, so the page is as it was."""
    if not any(step.action == "click_if_visible" for step in probe.setup):
        return
    probe.page.evaluate(CLEAR_SESSION_STORAGE_JS)
    probe.page.goto(probe.url)
    steps: list[FoundSetup] = []
    for step in probe.setup:
        target = probe.page.locator(step.selector).first
        once = False
        if step.action == "select":
            target.select_option(step.value)
        elif shows_within(target, DIALOG_WAIT_MS):
            target.click()
        else:
            once = True
            probe.say(f"init: {step.selector} did not show again on a new load: a once step")
        steps.append(replace(step, once=once))
    probe.setup[:] = steps


def send(probe: Probe, composer: str, text: str, key: str) -> tuple[str, str | None]:
    """Type and send `text`; how it was sent (`click` and the button's selector, or
    `enter`), once the mock saw the question's KEY."""
    box = probe.page.locator(composer).first
    box.fill(text)
    box_handle = box.element_handle()
    button = probe.handle("sendButton", box_handle)
    selector = None if button is None else probe.js("unique", button)
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
        if key in held_text(box)[0]:
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


STRUCTURE_LOOKS = 5
"""How many times init looks for the answer's message before it says no selector tells it
apart: a page that redraws the answer as it streams (the reference page replaces the answer's
children at each render) can detach the element init found between two of its looks, and a
detached element matches no selector. A page that is still gives the same answer each time."""


def find_structure(probe: Probe, key: str) -> tuple[Structure, ElementHandle]:
    """The message and answer selectors, from the first answer; and that message."""
    problem = ""
    for _ in range(STRUCTURE_LOOKS):
        found, message, problem = look_for_structure(probe, key)
        if found is not None:
            return found, message
    raise InitFailed(problem)


def look_for_structure(probe: Probe, key: str) -> tuple[Structure | None, ElementHandle, str]:
    """One look: the selectors (None, and why not) and the answer's message."""
    user = probe.until(
        "the page does not show the question that was sent: init finds the answer's message"
        " as the question bubble's sibling",
        lambda: probe.handle("holding", key),
    )
    answer = probe.until(
        "the page never showed init's answer (is the app showing the model's reply?)",
        lambda: probe.handle("holding", ANSWER, None, user),
    )
    pair = probe.value("siblings", answer, user)
    message = pair.get_property("0").as_element()
    mine = pair.get_property("1").as_element()
    assert message is not None
    assert mine is not None
    inside = probe.js("within", message, answer)
    if inside is None:
        return None, message, "no selector finds the answer's text inside its message"
    selector = probe.js("messageSelector", message, mine, None if inside == ":scope" else inside)
    if selector is None:
        return None, message, "no selector tells the answer's message from the question's"
    return Structure(selector, inside), message, ""


def watch_streaming(
    probe: Probe, composer: str, structure: Structure, done_message: ElementHandle
) -> tuple[FoundDone, str | None]:
    """Send the slow flow; compare its message while streaming with the finished one, and
    find a new button that stops it. Returns the done rule and the stop selector."""
    finished = probe.js("snapshot", done_message)
    probe.js("markButtons")
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
    during = probe.js("snapshot", streaming)
    probe.streaming_buttons = list(during["buttons"])
    stop_handle = probe.handle("newStop")
    stop = None if stop_handle is None else probe.js("unique", stop_handle)
    if stop_handle is not None and stop:
        stop_handle.click()
    entries = settled(probe, key)  # the slow answer's end: stopped, or run to its end
    if stop_handle is None or not stop:
        probe.notes["stop"] = "no new button said stop while the answer streamed"
    elif any(e.outcome == "client_disconnected" for e in entries):
        probe.notes["stop"] = "clicking it ended the stream early"
    else:
        probe.notes["stop"] = "it showed while streaming, but clicking it did not end the stream"
        stop = None
    return done_rule(finished, during, stop), stop


def settled(probe: Probe, key: str) -> list[JournalRecord]:
    """The KEY's journal entries once its turn settled."""
    return list(
        probe.mock.requests(key, settle_ms=300, timeout_ms=int(probe.timeout_s * 1000)).requests
    )


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
    thought = probe.handle("holding", REASONING, handle)
    thinking = None if thought is None else probe.js("within", handle, thought)
    if thinking is None:
        probe.notes["thinking"] = "the reasoning's text was not in the answer's message"
    error, done = find_error(probe, chat, found)
    return replace(found, thinking=thinking, error=error, done=done)


def find_error(probe: Probe, chat: ChatPage, found: Found) -> tuple[str | None, FoundDone]:
    """The error display's selector (None: none showed) and the done rule, made to end a
    failed turn too, from a turn init's `scaffold-repeat` fails. The question is sent
    without waiting for a message: a page may answer a failed turn with an error outside
    every message (a toast) and no message at all."""
    key = new_key()
    text = question("scaffold-repeat", key)
    turn = query_for(probe.page, chat.profile, text)
    send(probe, found.input, text, key)
    try:  # not the done rule: a failed turn may end without what ends a good one
        shown = probe.until("", lambda: probe.handle("holding", MALFORMED_REPLY))
    except InitFailed:
        probe.notes["error"] = (
            "a reply that was only markup, twice, showed no malformed-reply error (G3 fails"
            " until the page shows one)"
        )
        settled(probe, key)
        return None, found.done
    settled(probe, key)
    mine = find(probe.page, turn)
    message = (
        probe.page.locator(turn.message).nth(mine.index).element_handle() if mine.found else None
    )
    if message is None:
        probe.notes["error"] = "outside every message; a failed turn showed no message of its own"
    elif not probe.js("inside", message, shown):
        probe.notes["error"] = "outside every message"
    done = found.done
    appears = done.selector_or_attribute if done.kind == "appears" else None
    if message is not None and appears:
        done = also_on_error(probe, done, appears, message)
    return probe.js("general", shown), done


def also_on_error(probe: Probe, done: FoundDone, appears: str, message: ElementHandle) -> FoundDone:
    """An `appears` rule that also ends a turn that failed: a failed answer often gets
    another button (Try again, not Copy)."""
    after = probe.js("snapshot", message)
    if appears in after["buttons"]:
        return done
    other = next((b for b in after["buttons"] if b not in probe.streaming_buttons), None)
    if other is None:
        probe.notes["done"] = f"a failed turn never showed {appears}: its end is not seen"
        return done
    either = f":is({appears}, {other})"
    why = f"{appears} shows once an answer is done, {other} once a turn failed"
    return FoundDone("appears", either, why=why)


def offered_tools(probe: Probe, key: str) -> bool:
    bodies = [e.body for e in probe.mock.requests(key).requests]
    return any(bool(body.get("tools")) for body in objects(bodies))


def discover(probe: Probe) -> Found:
    """Every step, in order (see the module docstring)."""
    probe.page.add_init_script(DISCOVER_JS)
    probe.page.goto(probe.url)
    composer = find_composer(probe)
    once_or_every_load(probe)
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
