"""The kit's journal reads (conformance/oracle/upstream.py) against a real mock with a tiny journal
that another client floods: a turn whose requests were dropped is lost evidence, never a
count built on what is left, and a full journal that drops only older entries still counts.

The other client's requests are sent between the turn's own, in order, so which entries the
journal drops is exact and no test depends on timing.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from conformance.oracle.upstream import EvidenceLost, Upstream
from mock_llm import build_settings, serve_mock

from ...support.deadlines import DEADLINE_S
from ...support.sse import chat_body

CAPACITY = 3


@pytest.fixture
def tiny_mock() -> Iterator[str]:
    with serve_mock(build_settings(journal_capacity=CAPACITY)) as url:
        yield url


@pytest.fixture
def upstream(tiny_mock: str) -> Iterator[Upstream]:
    kit = Upstream(tiny_mock, DEADLINE_S)
    kit.check()
    yield kit
    kit.close()


def ask(mock_url: str, key: str) -> None:
    """One whole (not streamed) clean answer under `key`."""
    body = chat_body(f"[[mock:clean#{key}]]", stream=False)
    response = httpx.post(f"{mock_url}/v1/chat/completions", json=body, timeout=DEADLINE_S)
    response.raise_for_status()


def flood(mock_url: str, count: int) -> None:
    """Another client's requests, each under a KEY of its own."""
    for n in range(count):
        ask(mock_url, f"flood{n}")


def test_a_turn_whose_every_request_was_flooded_out_is_lost_evidence(
    tiny_mock: str, upstream: Upstream
):
    upstream.begin("turn")
    ask(tiny_mock, "turn")
    flood(tiny_mock, CAPACITY)
    with pytest.raises(EvidenceLost) as lost:
        upstream.requests("turn")
    message = str(lost.value)
    assert message.startswith("evidence lost for KEY turn: the mock's journal no longer holds")
    assert f"1 entries were dropped since, to stay within its bounds; it keeps {CAPACITY}" in (
        message
    )
    assert "python -m mock_llm --journal-size ENTRIES --journal-bytes BYTES" in message


def test_a_turn_that_kept_only_its_later_request_is_lost_evidence_not_a_count_of_one(
    tiny_mock: str, upstream: Upstream
):
    upstream.begin("turn")
    ask(tiny_mock, "turn")
    flood(tiny_mock, CAPACITY)
    ask(tiny_mock, "turn")  # the turn's second request, held; its first is gone
    with pytest.raises(EvidenceLost):
        upstream.requests("turn")


def test_a_full_journal_that_dropped_only_older_entries_still_counts_the_turn(
    tiny_mock: str, upstream: Upstream
):
    flood(tiny_mock, CAPACITY + 2)  # full, and dropping an old entry for every new one
    upstream.begin("turn")
    ask(tiny_mock, "turn")
    flood(tiny_mock, CAPACITY - 1)
    assert [entry.key for entry in upstream.requests("turn")] == ["turn"]


def test_a_journal_cleared_during_the_turn_is_lost_evidence(tiny_mock: str, upstream: Upstream):
    upstream.begin("turn")
    ask(tiny_mock, "turn")
    httpx.delete(f"{tiny_mock}/_mock/requests", timeout=DEADLINE_S).raise_for_status()
    with pytest.raises(EvidenceLost, match="it was cleared since"):
        upstream.requests("turn")


def test_a_key_never_begun_is_checked_from_the_sessions_start(tiny_mock: str, upstream: Upstream):
    ask(tiny_mock, "turn")
    flood(tiny_mock, CAPACITY)
    with pytest.raises(EvidenceLost):
        upstream.requests("turn")
