"""Side calls over HTTP: a title call inside a turn, the journal's view of it, the rules'
endpoints, the `--side-call` option and the client.

The module has a mock of its own that starts with one rule (Open WebUI's title task), so
the rules this module adds at run time never reach another module's requests. Rules added
here carry the test's KEY, so tests never match each other's requests either. Bounds are
checked on mocks of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_llm import MockClient, MockClientError, build_settings, builtin_flows, serve_mock
from mock_llm.play.side_calls import MAX_BODY_BYTES, MAX_PATTERN_CHARS, MAX_PATTERNS

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.processes import mock_process
from ...support.sse import chat_body, read_sse
from ..helpers.openai_errors import assert_openai_error

TITLE_RULE = r"^### Task:"
FLOWS = builtin_flows()
SIDE_ANSWER = FLOWS["side-call"].steps[0].content
CLEAN = FLOWS["clean"].steps[0].content
MARKUP = "<|tool_call_start|>"
WAIT_MS = int(DEADLINE_S * 1000 / 2)  # a settle read's own bound, inside the test's deadline


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with serve_mock(build_settings(side_calls=[TITLE_RULE])) as url:
        yield url


def question(key: str) -> str:
    return f"When do backups run? [[mock:scaffold-recover#{key}]]"


def title_body(history: str, stream: bool = True) -> dict[str, Any]:
    """Open WebUI's title task: one user message quoting the chat, trigger and all."""
    text = (
        "### Task: Generate a concise, 3-5 word title with an emoji summarizing the chat "
        f"history.\n### Chat History:\n<chat_history>\nUSER: {history}\n</chat_history>"
    )
    return {"model": "lfm2-test", "messages": [{"role": "user", "content": text}], "stream": stream}


async def turn_with_a_title_call(http: httpx.AsyncClient, key: str) -> list[str]:
    """scaffold-recover's two requests with a title call between them; the three contents."""
    first = await read_sse(http, chat_body(question(key)))
    title = await read_sse(http, title_body(question(key)))
    second = await read_sse(http, chat_body(question(key)))
    assert [first.done, title.done, second.done] == [True, True, True]
    return [first.joined("content"), title.joined("content"), second.joined("content")]


async def patterns(http: httpx.AsyncClient) -> list[str]:
    return (await http.get("/_mock/side-calls")).json()["patterns"]


# --- a side call inside a turn ----------------------------------------------------------------


async def test_a_title_call_between_two_requests_does_not_advance_the_turn(
    http: httpx.AsyncClient, key: str
):
    first, title, second = await turn_with_a_title_call(http, key)
    assert MARKUP in first
    assert title == SIDE_ANSWER
    assert second == CLEAN


async def test_the_journal_marks_the_title_call_as_a_side_call_under_the_key(
    http: httpx.AsyncClient, key: str
):
    await turn_with_a_title_call(http, key)
    entries = await settled_journal(http, key, count=3)
    assert [(e.side_call, e.flow, e.step, e.request_in_turn) for e in entries] == [
        (False, "scaffold-recover", 1, 1),
        (True, "side-call", 1, None),
        (False, "scaffold-recover", 2, 2),
    ]
    assert {e.key for e in entries} == {key}


async def test_side_calls_exclude_reads_only_the_turns_own_requests(
    http: httpx.AsyncClient, key: str
):
    await turn_with_a_title_call(http, key)
    params = {"key": key, "settle_ms": 0, "timeout_ms": WAIT_MS, "side_calls": "exclude"}
    read = (await http.get("/_mock/requests", params=params)).json()
    assert read["settled"] is True
    assert [(e["request_in_turn"], e["side_call"]) for e in read["requests"]] == [
        (1, False),
        (2, False),
    ]


async def test_side_calls_only_reads_just_the_side_calls(http: httpx.AsyncClient, key: str):
    await turn_with_a_title_call(http, key)
    await settled_journal(http, key, count=3)
    read = (await http.get("/_mock/requests", params={"key": key, "side_calls": "only"})).json()
    assert [e["flow"] for e in read["requests"]] == ["side-call"]


async def test_a_settle_read_of_a_key_with_only_a_side_call_settles_on_it(
    http: httpx.AsyncClient, key: str
):
    await read_sse(http, title_body(question(key)))
    params = {"key": key, "settle_ms": 0, "timeout_ms": WAIT_MS}
    read = (await http.get("/_mock/requests", params=params)).json()
    assert read["settled"] is True
    assert [e["side_call"] for e in read["requests"]] == [True]


async def test_a_side_call_not_streamed_gets_the_plain_answer(http: httpx.AsyncClient, key: str):
    response = await http.post("/v1/chat/completions", json=title_body(question(key), False))
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == SIDE_ANSWER


async def test_a_side_call_quoting_bad_and_doubled_triggers_is_answered_not_refused(
    http: httpx.AsyncClient, key: str
):
    history = f"one [[mock:nope]] two [[mock:bad flow]] three [[mock:clean#{key}]]"
    result = await read_sse(http, title_body(history))
    assert (result.status, result.joined("content")) == (200, SIDE_ANSWER)
    [entry] = await settled_journal(http, key)
    assert (entry.side_call, entry.outcome) == (True, "completed")


async def test_a_request_no_rule_matches_still_plays_its_turn(http: httpx.AsyncClient, key: str):
    result = await read_sse(http, chat_body(f"### Not a task [[mock:clean#{key}]]"))
    assert result.joined("content") == CLEAN
    [entry] = await settled_journal(http, key)
    assert entry.side_call is False


async def test_a_rule_added_at_run_time_matches_a_system_message_from_then_on(
    http: httpx.AsyncClient, key: str
):
    follow_ups = {
        "model": "lfm2-test",
        "stream": True,
        "messages": [
            {"role": "system", "content": f"Suggest three follow-up questions ({key})."},
            {"role": "user", "content": question(key)},
        ],
    }
    response = await http.post("/_mock/side-calls", json={"patterns": [f"follow-up .*{key}"]})
    assert response.status_code == 200
    assert (await read_sse(http, follow_ups)).joined("content") == SIDE_ANSWER
    assert MARKUP in (await read_sse(http, chat_body(question(key)))).joined("content")


# --- the rules' endpoints -----------------------------------------------------------------------


async def test_added_rules_are_listed_and_adding_them_again_changes_nothing(
    http: httpx.AsyncClient, key: str
):
    rules = [f"^tags {key}", f"^title {key}"]
    first = await http.post("/_mock/side-calls", json={"patterns": rules})
    assert first.status_code == 200
    assert (first.json()["added"], first.json()["unchanged"]) == (rules, [])
    assert first.json()["max_patterns"] == MAX_PATTERNS
    listed = await patterns(http)
    assert listed == first.json()["patterns"]
    assert [TITLE_RULE, *rules] == [p for p in listed if p == TITLE_RULE or key in p]
    again = (await http.post("/_mock/side-calls", json={"patterns": rules})).json()
    assert (again["added"], again["unchanged"], again["patterns"]) == ([], rules, listed)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{not json", "the body is not JSON"),
        (b'{"patterns": "^a"}', "'patterns' must be a list"),
        (b'{"patterns": [1]}', "must be a string"),
        (b'{"patterns": [""]}', "would match every request"),
        (b'{"patterns": ["' + b"x" * (MAX_PATTERN_CHARS + 1) + b'"]}', "characters long"),
        (b'{"patterns": ["(?:(?:a{1000}){1000}){1000}"]}', "repeats too much"),
        (b'{"patterns": ["\\ud800"]}', "lone UTF-16 surrogate"),
        (b'{"rules": ["^a"]}', "unknown key 'rules'"),
    ],
)
async def test_a_bad_body_is_400_naming_the_problem(
    http: httpx.AsyncClient, body: bytes, fragment: str
):
    response = await http.post("/_mock/side-calls", content=body)
    assert_openai_error(response, 400, fragment, code="invalid_side_calls")


async def test_a_bad_regex_is_400_naming_it_and_adds_none_of_the_good_ones_beside_it(
    http: httpx.AsyncClient, key: str
):
    response = await http.post("/_mock/side-calls", json={"patterns": [f"ok {key}", "(oops"]})
    assert_openai_error(response, 400, "'(oops' is not a valid regular", code="invalid_side_calls")
    assert response.json()["error"]["param"] == "patterns[1]"
    assert f"ok {key}" not in await patterns(http)


async def test_a_body_over_the_limit_is_413(http: httpx.AsyncClient):
    body = b'{"patterns": ["' + b"x" * MAX_BODY_BYTES + b'"]}'
    response = await http.post("/_mock/side-calls", content=body)
    assert_openai_error(response, 413, f"{MAX_BODY_BYTES} bytes", code="side_calls_too_large")


async def test_rules_past_the_limit_are_409_and_rules_in_force_are_still_unchanged():
    full = build_settings(side_calls=[f"^rule-{i}$" for i in range(MAX_PATTERNS)])
    with serve_mock(full) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            refused = await client.post("/_mock/side-calls", json={"patterns": ["^more$"]})
            again = await client.post("/_mock/side-calls", json={"patterns": ["^rule-0$"]})
    assert_openai_error(refused, 409, f"the limit is {MAX_PATTERNS}", code="side_call_limit")
    assert again.json()["unchanged"] == ["^rule-0$"]


async def test_a_rule_that_backtracks_for_ages_does_not_hang_the_server(key: str):
    with serve_mock(build_settings(side_calls=[r"^(a|aa)+$"])) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            body = chat_body(f"[[mock:clean#{key}]]")
            body["messages"][0] = {"role": "system", "content": "a" * 60 + "b"}
            result = await read_sse(client, body)
            [entry] = await settled_journal(client, key)
    assert result.joined("content") == CLEAN
    assert entry.side_call is False


# --- the command line and the client ----------------------------------------------------------


def test_the_side_call_option_declares_a_rule(tmp_path: Path):
    with mock_process(tmp_path, "--side-call", TITLE_RULE) as mock:
        url = mock.url
        listed = httpx.get(f"{url}/_mock/side-calls", timeout=DEADLINE_S).json()["patterns"]
        body = title_body(question("cli"), stream=False)
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=DEADLINE_S)
        [entry] = httpx.get(f"{url}/_mock/requests", timeout=DEADLINE_S).json()["requests"]
    assert listed == [TITLE_RULE]
    assert answer.json()["choices"][0]["message"]["content"] == SIDE_ANSWER
    assert (entry["side_call"], entry["key"]) == (True, "cli")


@pytest.fixture
def mock(mock_url: str) -> Iterator[MockClient]:
    with MockClient(mock_url, timeout=DEADLINE_S) as client:
        yield client


def play(mock_url: str, body: dict[str, Any]) -> None:
    httpx.post(f"{mock_url}/v1/chat/completions", json=body, timeout=DEADLINE_S).raise_for_status()


def test_the_client_adds_and_lists_rules(mock: MockClient, key: str):
    added = mock.add_side_calls([f"^client {key}"])
    assert (added.added, added.unchanged) == ((f"^client {key}",), ())
    assert added.patterns == mock.side_calls()
    assert mock.add_side_calls([f"^client {key}"]).unchanged == (f"^client {key}",)


def test_the_client_reads_side_calls_and_leaves_them_out_on_request(
    mock: MockClient, mock_url: str, key: str
):
    play(mock_url, chat_body(question(key), stream=False))
    play(mock_url, title_body(question(key), stream=False))
    every = mock.requests(key, settle_ms=0, timeout_ms=WAIT_MS)
    own = mock.requests(key, side_calls="exclude")
    assert [r.side_call for r in every.requests] == [False, True]
    assert [(r.request_in_turn, r.side_call) for r in own.requests] == [(1, False)]


def test_the_client_raises_the_mocks_reason_for_a_bad_rule(mock: MockClient):
    with pytest.raises(MockClientError) as caught:
        mock.add_side_calls(["(oops"])
    assert (caught.value.status, caught.value.code, caught.value.param) == (
        400,
        "invalid_side_calls",
        "patterns[0]",
    )
