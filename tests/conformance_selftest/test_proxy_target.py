"""The guard proxy makes a chat app with no guardrail conform: the whole kit, twice.

Relay Chat (tests/conformance_selftest/relay) asks the model with the official openai SDK
and relays `delta.content` to its page as it comes, as many chat apps do. Pointed at the
mock, the kit fails it on every clause the guardrail exists for; pointed at the guard
proxy in front of the same mock, every clause its profile lets the kit run passes, Stop
included (the page's Stop closes the app's request, the app's SDK stream, the proxy's
upstream stream: the mock records the disconnect). Relay Chat writes no per-turn log, but
behind the proxy the kit is given the proxy's (`--guard-log`): G10 is judged on the proxy's
lines, tied to each turn by the request id the mock journaled, and passes. Thinking and tools
are not things Relay Chat has, so those clauses skip, with the reason. Both runs are given a
recorded leak (`--cases`): straight from the mock Relay Chat shows it, behind the proxy the
case ends as its flow expects (its log count included).
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mock_llm import serve_mock

from ..support.deadlines import DEADLINE_S
from ..support.servers import serve_guard
from .kit_runs import CASES, KIT_DEADLINE_S, run_kit
from .relay import PROFILE, serve_relay

pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.timeout(KIT_DEADLINE_S + 4 * DEADLINE_S),
]

GUARDRAIL_CLAUSES = {"G2", "G3", "G4", "G5", "G6", "G8", "G13", "NEVER"}
"""What an app that relays markup fails: the recovery, the error, the stripping."""
NOT_RELAY_CHATS = {"G9", "G12", "G14"}
"""Clauses for what Relay Chat does not have (thinking, tools)."""


@contextmanager
def guard_log_in(path: Path) -> Generator[Path]:
    """The in-process guard's log lines written to `path`, as `python -m guard` writes them
    to its stderr (one message a line)."""
    logger = logging.getLogger("guard")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield path
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()


@pytest.fixture
def mock_url() -> Iterator[str]:
    with serve_mock() as url:
        yield url


def test_without_the_proxy_the_kit_fails_the_app_on_the_guardrails_clauses(
    mock_url: str, tmp_path: Path
) -> None:
    with serve_relay(f"{mock_url}/v1") as app_url:
        direct = run_kit(app_url, mock_url, PROFILE, tmp_path, "--cases", str(CASES))
    assert direct.cases, f"the kit wrote no JUnit results; {direct.describe()}"
    assert direct.returncode != 0
    failed = direct.with_verdict("failed")
    assert failed == GUARDRAIL_CLAUSES | {"CASE"}, direct.describe()  # the recorded leak too


def test_behind_the_proxy_the_kit_passes_every_clause_it_can_run(
    mock_url: str, tmp_path: Path
) -> None:
    with (
        serve_guard(mock_url) as proxy_url,
        serve_relay(f"{proxy_url}/v1") as app_url,
        guard_log_in(tmp_path / "guard.log") as log,
    ):
        proxied = run_kit(
            app_url, mock_url, PROFILE, tmp_path, "--cases", str(CASES), "--guard-log", str(log)
        )
    assert proxied.cases, f"the kit wrote no JUnit results; {proxied.describe()}"
    assert proxied.returncode == 0, proxied.describe()
    skipped = proxied.with_verdict("skipped")
    passed = proxied.with_verdict("passed")
    assert skipped == NOT_RELAY_CHATS, proxied.describe()
    assert passed == set(proxied.report) - NOT_RELAY_CHATS
    assert GUARDRAIL_CLAUSES | {"G1", "G7", "G10", "G11", "CASE"} <= passed
