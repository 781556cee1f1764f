"""The preflight: is everything the kit needs reachable, is the app wired to this mock, and
does the page have every part the profile declares?

Each failure ends the run with one line that says what is wrong and what to do, instead of
every clause failing with the same timeout.

Deliberate choices:
- Each declared part is proved once per worker, by a turn of its own on a fresh page, before
  any clause: the answer (a clean turn shows text through `selectors.answer`, and no
  error), the error display (a turn whose model fails shows text through
  `selectors.error`), the thinking display (a turn whose model thinks shows text through
  `selectors.thinking`), the stop control (it can be clicked while a slow answer streams)
  and tools (the clean turn's request offered the model some). A page that lacks a part
  would otherwise fail its clause as if the guardrail were wrong (an empty thinking display
  reads as filtered thinking), or wait a whole page timeout in every test that needs it.
- The parts are proved with flows a guardrail does not change (clean, thinking, slow, and
  an HTTP 500 on every request, PREFLIGHT_FLOWS), so an app with no guardrail at all
  passes the preflight and meets its failures in the clauses.
- Every problem found is named, all in one line: one run tells everything to fix.
- Each wait is the page timeout (`--turn-timeout`), and a message names what was waited for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import httpx
import pytest

from conformance.oracle.guard_log import wait_for_tally
from conformance.oracle.logs import log_size
from conformance.oracle.upstream import MockUnreachable
from conformance.run.plays import describe
from conformance.run.questions import question
from mock_llm.client import JournalRecord, MockClientError

if TYPE_CHECKING:
    from collections.abc import Callable

    from conformance.browser.chat import ChatPage, TurnView
    from conformance.browser.session import BrowserSession
    from conformance.oracle.cases import CaseFile
    from conformance.oracle.target import Target

EXIT_PREFLIGHT = 3
ERROR_FLOW = "conformance-preflight-error"
PREFLIGHT_FLOWS = f"""flows:
  {ERROR_FLOW}:
    description: >-
      The conformance kit's preflight: the model service fails (HTTP 500) on every request,
      retries included, so the page must show its error display.
    steps:
      - fault: {{kind: http, status: 500}}
"""
"""The flow the preflight proves the error display with (added to the mock at run time)."""
THINKING_FLOW = "thinking"
SLOW_FLOW = "slow"


def fail(message: str) -> NoReturn:
    pytest.exit(f"conformance preflight: {message}", returncode=EXIT_PREFLIGHT)


def check_reachable(target: Target) -> None:
    try:
        page = httpx.get(target.app_url, timeout=target.timeout_s, follow_redirects=True)
    except httpx.HTTPError as exc:
        fail(f"the app's page at {target.app_url} cannot be reached: {exc}")
    else:
        if page.status_code >= 400:
            fail(f"the app's page at {target.app_url} answered HTTP {page.status_code}")
    try:
        target.upstream.check()
    except MockUnreachable as exc:
        fail(str(exc))
    if target.profile.has("log") and target.log_file is None:
        fail("the profile declares a log, but no --app-log was given")


def register_side_calls(target: Target) -> None:
    """Tell the mock which requests are the app's side calls (titles, tags), per the profile."""
    try:
        target.upstream.add_side_calls(target.profile.side_calls)
    except MockClientError as exc:
        fail(f"the mock refused the profile's model_calls.side_calls: {exc.message}")


def add_cases(target: Target, cases: tuple[CaseFile, ...]) -> None:
    """Add the `--cases` flows to the mock (a no-op for the same flows already there)."""
    for case in cases:
        try:
            target.upstream.add_flows(case.text)
        except MockClientError as exc:
            fail(f"the mock refused the flows of the case file {case.path}: {exc.message}")


def check_once_setup(session: BrowserSession) -> None:
    """The profile's once-per-run steps, done before the first turn (once per worker)."""
    from conformance.browser.setup_steps import SetupFailed

    try:
        session.set_up_once()
    except SetupFailed as exc:
        fail(f"the profile's once-per-run set-up failed: {exc}")


def check_wiring(target: Target, chat: ChatPage, key: str) -> TurnView:
    """One clean turn with a fresh KEY must show up in the mock's journal; its view. It asks
    the plays' question: an app may offer tools only for a question its documents cover."""
    from conformance.browser.composer import QuestionNotSent

    target.upstream.begin(key)
    offset = log_size(target.log_file)
    try:
        chat.open()
        view = chat.ask(question("clean", key))
    except QuestionNotSent as exc:  # the page is not ready: the cause, not the timeout
        fail(f"a first turn on {target.app_url} could not start: {exc}")
    except Exception as exc:
        why = describe(exc, first_line=True)
        fail(f"a first turn on {target.app_url} did not finish: {why}")
    entries = target.upstream.requests(key)
    if not entries:
        fail(
            f"the app at {target.app_url} is not talking to the mock at {target.mock_url}:"
            f" a turn with KEY {key} never reached its journal"
        )
    if target.log_source == "guard" and target.log_file is not None:
        check_guard_log(target, target.log_file, offset, entries)
    elif target.log_file is not None and target.profile.has("log"):
        try:
            target.log_file.read_bytes()
        except OSError as exc:
            fail(f"the app log {target.log_file} cannot be read after a turn: {exc.strerror}")
    return view


def check_parts(
    target: Target, chat: ChatPage, wiring: TurnView, wiring_key: str, key: Callable[[str], str]
) -> None:
    """Every part the profile declares is on the page (the module's docstring says how);
    `wiring` is the wiring turn's view, `key(part)` a fresh KEY for a part's own turn."""
    profile = target.profile
    selectors = profile.selectors
    problems = _clean_turn_problems(target, wiring)
    if profile.has("tools") and not any(
        record.body.get("tools") for record in target.upstream.requests(wiring_key)
    ):
        problems.append(
            "the profile declares `capabilities.tools`, but the app offered the model no tools"
            " in a clean turn (its request carried no `tools`): declare"
            " `capabilities.tools = false`, or turn the app's tools on"
        )
    if profile.has("thinking"):
        what = f"a turn whose model thought (flow {THINKING_FLOW})"
        try:
            chat.open()
            view = chat.ask(question(THINKING_FLOW, key("thinking")))
        except Exception as exc:
            problems.append(f"{what} did not finish: {describe(exc, first_line=True)}")
        else:
            if not view.thinking.strip():
                problems.append(
                    f"the page has no element matching `{selectors.thinking}` with text in"
                    f" {what}: declare `capabilities.thinking = false` or fix"
                    " `selectors.thinking`"
                )
    if profile.has("stop"):
        problems.extend(_stop_problems(target, chat, question(SLOW_FLOW, key("stop"))))
    problems.extend(_error_problems(target, chat, key("error")))
    if problems:
        fail("; ".join(problems))


def _clean_turn_problems(target: Target, view: TurnView) -> list[str]:
    selectors = target.profile.selectors
    if view.state == "error":
        return [
            f"a clean turn ended in the error state, showing {view.error!r} through"
            f" `{selectors.error}`: fix `selectors.error` if that is not an error"
        ]
    if not view.answer.strip():
        return [
            f"the page has no element matching `{selectors.answer}` with text in the answer"
            " to a clean turn: fix `selectors.answer` (inside `selectors.message`)"
        ]
    return []


def _stop_problems(target: Target, chat: ChatPage, ask: str) -> list[str]:
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    stop = target.profile.selectors.stop
    try:
        chat.open()
        chat.send(ask)
        chat.stop(trial=True)  # visible, enabled, not covered: as G11 needs it
        chat.stop()  # the slow answer need not run to its end
    except PlaywrightTimeoutError:
        return [
            f"the page has no element matching `{stop}` that could be clicked within"
            f" {target.timeout_s:g} s while a slow answer streamed (flow {SLOW_FLOW}):"
            " declare `capabilities.stop = false` or fix `selectors.stop`"
        ]
    except Exception as exc:
        why = describe(exc, first_line=True)
        return [f"a slow answer's turn (flow {SLOW_FLOW}) broke: {why}"]
    return []


def _error_problems(target: Target, chat: ChatPage, key: str) -> list[str]:
    error = target.profile.selectors.error
    what = f"a turn whose model failed (HTTP 500 on every request, flow {ERROR_FLOW})"
    try:
        target.upstream.add_flows(PREFLIGHT_FLOWS)
    except MockClientError as exc:
        return [f"the mock refused the preflight's flow {ERROR_FLOW}: {exc.message}"]
    try:
        chat.open()
        view = chat.ask(question(ERROR_FLOW, key))
    except Exception as exc:
        why = describe(exc, first_line=True)
        return [f"{what} did not finish: {why}: fix `selectors.error` or the done rule"]
    if not view.error:
        return [
            f"the page has no element matching `{error}` with text in {what}: fix `selectors.error`"
        ]
    return []


def check_guard_log(target: Target, log: Path, offset: int, entries: list[JournalRecord]) -> None:
    """The wiring turn went through the guard proxy, and `--guard-log` is that guard's log:
    its requests carry request ids, and the log has their lines."""
    ids = [entry.request_id for entry in entries if entry.request_id is not None]
    if len(ids) < len(entries):
        fail(
            f"with --guard-log, the app's model calls must go through the guard proxy, but the"
            f" wiring turn's requests reached the mock at {target.mock_url} without its"
            " X-Request-Id: point the app's model URL at the guard (python -m guard"
            f" --upstream {target.mock_url}/v1)"
        )
    try:
        found = wait_for_tally(log, offset, ids, target.timeout_s)
    except OSError as exc:
        fail(f"the guard's log {log} cannot be read after a turn: {exc.strerror}")
    if found.missing:
        fail(
            f"the guard's log {log} has no line for the wiring turn's request id"
            f" {', '.join(found.missing)} within {target.timeout_s:g} s: is it the log"
            " (stderr) of the guard proxy in front of this app?"
        )
