"""MockClient against a served mock: every call, end to end, on one turn KEY per test."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mock_llm import MockClient, MockClientError, build_settings, builtin_flows, serve_mock

from ...support.deadlines import DEADLINE_S
from ...support.sse import chat_body

WAIT_MS = int(DEADLINE_S * 1000 / 2)


@pytest.fixture
def mock(mock_url: str) -> Iterator[MockClient]:
    with MockClient(mock_url, timeout=DEADLINE_S) as client:
        yield client


def play(mock_url: str, text: str) -> None:
    body = chat_body(text, stream=False)
    response = httpx.post(f"{mock_url}/v1/chat/completions", json=body, timeout=DEADLINE_S)
    response.raise_for_status()


def test_health_counts_the_flows(mock: MockClient):
    health = mock.health()
    assert health.status == "ok"
    assert health.flows >= len(builtin_flows())


def test_flows_carry_their_expect_blocks(mock: MockClient):
    by_name = {flow.name: flow for flow in mock.flows()}
    assert by_name["scaffold-repeat"].expect == builtin_flows()["scaffold-repeat"].expect
    assert by_name["scaffold-repeat"].step_count == 2
    assert by_name["slow"].expect is None


def test_family_flows_carry_their_family_and_their_outcome_elsewhere(mock: MockClient):
    by_name = {flow.name: flow for flow in mock.flows()}
    qwen = builtin_flows()["qwen-tool-call"]
    assert (by_name["qwen-tool-call"].family, by_name["qwen-tool-call"].elsewhere) == (
        "Qwen",
        qwen.elsewhere,
    )
    assert by_name["deepseek-dsml"].elsewhere is None
    assert by_name["clean"].family is None


def test_added_flows_are_then_listed_and_adding_again_is_a_no_op(mock: MockClient, key: str):
    flows = {"flows": {f"rt-{key}": {"steps": [{"content": "hello"}]}}}
    assert mock.add_flows(flows).added == (f"rt-{key}",)
    assert mock.add_flows(flows).unchanged == (f"rt-{key}",)
    assert {f.name: f.source for f in mock.flows()}[f"rt-{key}"] == "runtime"


def test_a_refused_addition_raises_with_the_mocks_reason(mock: MockClient):
    with pytest.raises(MockClientError) as caught:
        mock.add_flows("flows:\n  x:\n    steps:\n      - contnet: hi\n")
    assert (caught.value.status, caught.value.code) == (400, "invalid_flows")
    assert "line 4" in caught.value.message


def test_a_settle_read_returns_the_turns_typed_records(mock: MockClient, mock_url: str, key: str):
    play(mock_url, f"[[mock:three-steps#{key}]]")
    play(mock_url, f"[[mock:three-steps#{key}]]")
    read = mock.requests(key, settle_ms=0, timeout_ms=WAIT_MS)
    assert read.settled is True
    assert [(r.request_in_turn, r.outcome) for r in read.requests] == [
        (1, "completed"),
        (2, "completed"),
    ]
    assert read.requests[0].ended_ms is not None
    assert read.requests[0].ended_ms <= read.requests[1].received_ms
    assert {r.api for r in read.requests} == {"openai"}


def test_a_plain_read_does_not_say_whether_it_settled(mock: MockClient, key: str):
    assert mock.requests(key).settled is None


def test_a_bad_settle_read_raises_naming_the_parameter(mock: MockClient):
    with pytest.raises(MockClientError) as caught:
        mock.requests(settle_ms=10)
    assert (caught.value.status, caught.value.param) == (400, "settle_ms")


def test_clear_empties_the_journal():
    with serve_mock(build_settings()) as url, MockClient(url, timeout=DEADLINE_S) as mock:
        play(url, "[[mock:clean#a]]")
        mock.clear()
        read = mock.requests()
    assert (read.requests, read.dropped) == ((), 0)
