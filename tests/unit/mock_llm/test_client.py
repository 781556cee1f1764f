"""MockClient's reading of the mock's answers, on canned responses (httpx.MockTransport).

What the real server answers is pinned in tests/integration/mock_llm/test_mock_client.py; here, the
client's own decisions: what it sends, how it types what it gets, and what it refuses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mock_llm import Expect, JournalRecord, MockClient, MockClientError
from mock_llm.journal.store import JOURNAL_VERSION

RECORD: dict[str, Any] = {
    "seq": 3, "path": "/v1/chat/completions", "key": "k1", "flow": "clean", "step": 1,
    "steps": 1, "request_in_turn": 1, "stream": True, "status": 200, "outcome": "completed",
    "error": None, "fault": None, "chunks_sent": 9, "received_ms": 10.5,
    "first_chunk_ms": 11.0, "ended_ms": 12.25, "disconnected_ms": None, "body": {"model": "m"},
}  # fmt: skip


def journal_read(**overrides: Any) -> dict[str, Any]:
    read = {
        "version": JOURNAL_VERSION,
        "started_at": 1_700_000_000.0,
        "now_ms": 20.0,
        "requests": [RECORD],
        "dropped": 0,
        "capacity": 1000,
    }
    return {**read, **overrides}


def client(handler: Callable[[httpx.Request], httpx.Response]) -> MockClient:
    return MockClient("http://mock", transport=httpx.MockTransport(handler))


def answering(body: object, seen: list[httpx.Request] | None = None, status: int = 200):
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, json=body)

    return handler


def test_a_journal_read_becomes_typed_records():
    read = client(answering(journal_read())).requests("k1")
    assert read.requests == (JournalRecord(**RECORD),)
    assert (read.version, read.now_ms, read.settled) == (JOURNAL_VERSION, 20.0, None)


@pytest.mark.parametrize("api", ["openai", "ollama", "responses", "anthropic", "gemini"])
def test_a_record_says_which_api_the_request_came_in(api: str):
    read = client(answering(journal_read(requests=[{**RECORD, "api": api}]))).requests("k1")
    assert [record.api for record in read.requests] == [api]


def test_a_settle_read_sends_its_parameters_and_reports_settled():
    seen: list[httpx.Request] = []
    read = client(answering(journal_read(settled=False), seen)).requests(
        "k1", settle_ms=300, timeout_ms=5000
    )
    assert read.settled is False
    assert dict(seen[0].url.params) == {"key": "k1", "settle_ms": "300", "timeout_ms": "5000"}


def test_a_settle_reads_http_timeout_covers_the_server_side_wait():
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(answering(journal_read(settled=True), seen))
    with MockClient("http://mock", timeout=3, transport=transport) as mock:
        mock.requests("k1", settle_ms=0, timeout_ms=40_000)
    assert seen[0].extensions["timeout"]["read"] == 43


def test_fields_a_newer_mock_adds_are_ignored():
    record = {**RECORD, "new_field": 1}
    read = client(answering(journal_read(requests=[record], extra=True))).requests()
    assert read.requests[0].seq == 3


def test_a_journal_of_another_version_is_refused():
    with pytest.raises(MockClientError, match="journal schema version 1"):
        client(answering(journal_read(version=1))).requests()


def test_a_record_missing_a_field_is_refused():
    record = {k: v for k, v in RECORD.items() if k != "received_ms"}
    with pytest.raises(MockClientError, match="cannot read JournalRecord"):
        client(answering(journal_read(requests=[record]))).requests()


def test_an_error_answer_raises_with_the_openai_error_fields():
    error = {"message": "nope", "type": "invalid_request_error", "param": "settle_ms", "code": None}
    with pytest.raises(MockClientError) as caught:
        client(answering({"error": error}, status=400)).requests("k", settle_ms=1)
    assert (caught.value.status, caught.value.message, caught.value.param) == (
        400,
        "nope",
        "settle_ms",
    )


def test_an_error_answer_that_is_not_json_keeps_its_text():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="bad gateway")

    with pytest.raises(MockClientError) as caught:
        client(handler).health()
    assert (caught.value.status, caught.value.message) == (502, "bad gateway")


def test_flows_are_summarised_with_their_expect_block():
    flow = {
        "name": "f", "description": "d", "source": "runtime", "canary": None,
        "expect": {"shown": "hi", "recovery": False, "stripped_chars": 0, "error": None,
                   "requests": 1},
        "steps": [{}, {}],
    }  # fmt: skip
    [summary] = client(answering({"flows": [flow]})).flows()
    assert (summary.name, summary.source, summary.step_count) == ("f", "runtime", 2)
    assert summary.expect == Expect("hi", False, 0, None, 1)


def added(seen: list[httpx.Request]):
    return answering(
        {"added": ["f"], "unchanged": [], "runtime_flows": 1, "max_runtime_flows": 9}, seen
    )


def test_add_flows_sends_yaml_text_as_it_is():
    seen: list[httpx.Request] = []
    text = "flows:\n  f: {steps: [{content: hi}]}\n"
    result = client(added(seen)).add_flows(text)
    assert (seen[0].method, seen[0].url.path) == ("POST", "/_mock/flows")
    assert seen[0].content.decode() == text
    assert (result.added, result.runtime_flows, result.max_runtime_flows) == (("f",), 1, 9)


def test_add_flows_sends_a_mapping_as_json():
    seen: list[httpx.Request] = []
    flows = {"flows": {"f": {"steps": [{"content": "caf\u00e9"}]}}}
    client(added(seen)).add_flows(flows)
    assert seen[0].headers["content-type"] == "application/json"
    assert json.loads(seen[0].content) == flows


def test_clear_deletes_the_journal():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    client(handler).clear()
    assert (seen[0].method, seen[0].url.path) == ("DELETE", "/_mock/requests")


def test_health_reads_status_and_flow_count():
    health = client(answering({"status": "ok", "flows": 25})).health()
    assert (health.status, health.flows) == ("ok", 25)


def test_an_answer_that_is_not_an_object_is_refused():
    with pytest.raises(MockClientError, match="expected a JSON object for Health"):
        client(answering([1, 2])).health()


def test_a_record_carries_the_requests_id_and_an_older_mocks_reads_as_none():
    with_id = client(answering(journal_read(requests=[{**RECORD, "request_id": "r-1"}])))
    assert with_id.requests("k1").requests[0].request_id == "r-1"
    assert client(answering(journal_read())).requests("k1").requests[0].request_id is None


def test_a_read_says_whether_entries_from_a_seq_on_were_lost():
    read = client(answering(journal_read(first_seq=5, next_seq=9))).requests("k1")
    assert (read.lost_since(4), read.lost_since(5), read.lost_since(9)) == (True, False, False)


def test_a_mock_that_does_not_say_what_it_holds_leaves_loss_unknown():
    assert client(answering(journal_read())).requests("k1").lost_since(1) is None
