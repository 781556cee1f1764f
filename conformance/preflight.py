"""The preflight: is everything the kit needs reachable, and is the app wired to this mock?

Each failure ends the run with one line that says what is wrong and what to do, instead of
every clause failing with the same timeout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import httpx
import pytest

from conformance.guard_log import wait_for_tally
from conformance.target import log_size
from conformance.upstream import MockUnreachable
from mock_llm.client import JournalRecord, MockClientError

if TYPE_CHECKING:
    from conformance.cases import CaseFile
    from conformance.page import ChatPage
    from conformance.target import Target

EXIT_PREFLIGHT = 3


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


def check_wiring(target: Target, chat: ChatPage, key: str) -> None:
    """One clean turn with a fresh KEY must show up in the mock's journal."""
    target.upstream.begin(key)
    offset = log_size(target.log_file)
    try:
        chat.open()
        chat.ask(f"Hello [[mock:clean#{key}]]")
    except Exception as exc:
        fail(f"a first turn on {target.app_url} did not finish: {type(exc).__name__}: {exc}")
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
