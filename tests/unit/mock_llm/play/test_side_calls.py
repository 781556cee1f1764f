"""Side-call rules, pure: how they are checked, what they match, and how a request is routed.

Also the pieces around them that need no server: the journal's `side_call` field and
filter, the `side_calls` query parameter, the client's side-call calls (on canned answers)
and the `--side-call` option.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mock_llm import JournalRecord, MockClient, SideCallsAdded
from mock_llm.cli import main, parse_args
from mock_llm.flows.trigger import TriggerError
from mock_llm.journal.query import QueryError, parse_journal_query
from mock_llm.journal.store import JOURNAL_VERSION, Journal
from mock_llm.play.routing import Destination, route_request
from mock_llm.play.side_calls import (
    COMPILE_BUDGET,
    MAX_PATTERN_CHARS,
    MAX_PATTERNS,
    SIDE_CALL_FLOW,
    SideCallRules,
    SideCallsRefused,
    compile_cost,
    compile_rules,
    parse_patterns_body,
    side_call_key,
)
from mock_llm.server.runner import build_settings

TITLE = "### Task: Generate a concise, 3-5 word title"
Message = dict[str, Any]


def title_call(history: str) -> list[Message]:
    """Open WebUI's title task: one user message quoting the chat."""
    return [
        {
            "role": "user",
            "content": f"{TITLE} ...\n### Chat History:\n<chat_history>\n{history}\n"
            "</chat_history>",
        }
    ]


def rules(*patterns: str) -> SideCallRules:
    return SideCallRules.of(patterns)


def refused(patterns: list[object]) -> SideCallsRefused:
    with pytest.raises(SideCallsRefused) as caught:
        compile_rules(patterns)
    return caught.value


# --- checking rules ------------------------------------------------------------------------


def test_a_bad_regex_is_a_400_naming_the_rule_and_its_index():
    error = refused(["^ok$", "(unclosed"])
    assert (error.status, error.code, error.param) == (400, "invalid_side_calls", "patterns[1]")
    assert "'(unclosed' is not a valid regular expression" in error.message


def test_a_rule_over_the_length_limit_is_refused():
    error = refused(["x" * (MAX_PATTERN_CHARS + 1)])
    assert (error.status, error.param) == (400, "patterns[0]")
    assert f"the limit is {MAX_PATTERN_CHARS}" in error.message


def test_a_rule_of_exactly_the_length_limit_is_taken():
    assert len(compile_rules(["x" * MAX_PATTERN_CHARS])) == 1


def test_an_empty_rule_is_refused_because_it_would_match_everything():
    assert "match every request" in refused([""]).message


def test_a_rule_that_is_not_a_string_is_refused():
    error = refused(["ok", 42])
    assert (error.param, error.status) == ("patterns[1]", 400)
    assert "must be a string" in error.message


def test_a_rule_with_a_lone_surrogate_is_refused():
    assert "lone UTF-16 surrogate" in refused(["\ud800"]).message


def test_a_rule_that_would_compile_for_ages_is_refused_before_compiling():
    assert compile_cost("(?:a{1000}){1000}") > COMPILE_BUDGET
    assert "repeats too much" in refused(["(?:(?:a{1000}){1000}){1000}"]).message


def test_escaped_braces_and_open_ranges_do_not_count_as_costly_repeats():
    assert compile_cost(r"\{1000000\}") == len(r"\{1000000\}")
    assert compile_cost(".{0,100000}x") == len(".{0,100000}x")


def test_more_than_the_maximum_of_distinct_rules_is_a_409():
    error = refused([f"rule-{i}" for i in range(MAX_PATTERNS + 1)])
    assert (error.status, error.code) == (409, "side_call_limit")


def test_repeated_rules_in_one_list_are_kept_once():
    compiled = compile_rules(["a", "b", "a"])
    assert [rule.pattern for rule in compiled] == ["a", "b"]


def test_adding_rules_already_in_force_leaves_them_unchanged():
    addition = rules("a").add(compile_rules(["a", "b"]))
    assert (addition.added, addition.unchanged) == (("b",), ("a",))
    assert addition.rules.patterns == ("a", "b")


def test_adding_past_the_maximum_is_a_409_and_changes_nothing():
    present = rules(*(f"rule-{i}" for i in range(MAX_PATTERNS)))
    with pytest.raises(SideCallsRefused) as caught:
        present.add(compile_rules(["one-too-many"]))
    assert (caught.value.status, caught.value.code) == (409, "side_call_limit")
    assert len(present) == MAX_PATTERNS


def test_rules_already_in_force_do_not_count_against_the_maximum():
    present = rules(*(f"rule-{i}" for i in range(MAX_PATTERNS)))
    assert present.add(compile_rules(["rule-0"])).unchanged == ("rule-0",)


@pytest.mark.parametrize(
    ("body", "fragment", "param"),
    [
        (b"{not json", "the body is not JSON", None),
        (b'["^a"]', "must be a JSON object", None),
        (b'{"patterns": "^a"}', "'patterns' must be a list", "patterns"),
        (b'{"patterns": ["^a"], "flags": "i"}', "unknown key 'flags'", "flags"),
        (b"\xff\xfe{", "the body is not JSON", None),
    ],
)
def test_a_badly_shaped_body_is_refused_naming_what_is_wrong(
    body: bytes, fragment: str, param: str | None
):
    with pytest.raises(SideCallsRefused) as caught:
        parse_patterns_body(body)
    assert (caught.value.status, caught.value.code) == (400, "invalid_side_calls")
    assert fragment in caught.value.message
    assert caught.value.param == param


def test_a_well_shaped_body_gives_its_patterns():
    assert parse_patterns_body(b'{"patterns": ["^a", "b"]}') == ["^a", "b"]


# --- matching -------------------------------------------------------------------------------


def test_a_rule_matches_the_last_user_message():
    assert rules(r"^### Task:").matches(title_call("USER: hi"))


def test_a_rule_matches_a_system_message():
    messages = [
        {"role": "system", "content": "You write chat titles."},
        {"role": "user", "content": "When do backups run?"},
    ]
    assert rules("chat titles").matches(messages)


def test_a_rule_matches_a_developer_message_like_a_system_one():
    messages = [
        {"role": "developer", "content": "Suggest follow-up questions."},
        {"role": "user", "content": "hi"},
    ]
    assert rules("follow-up").matches(messages)


def test_a_rule_matches_text_parts_of_a_list_content():
    content = [
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": TITLE},
    ]
    assert rules(r"^### Task:").matches([{"role": "user", "content": content}])


def test_earlier_user_and_assistant_messages_are_not_matched():
    messages = [
        {"role": "user", "content": TITLE},
        {"role": "assistant", "content": TITLE},
        {"role": "user", "content": "When do backups run?"},
    ]
    assert not rules(r"^### Task:").matches(messages)


def test_no_rules_match_nothing():
    assert not SideCallRules().matches(title_call("USER: hi"))


def test_a_match_that_times_out_counts_as_no_match():
    # `regex` defuses `(a+)+$`; alternation of overlapping branches still backtracks
    # exponentially. The rule matches (at the final `b`) once the backtracking is over,
    # which for 60 `a`s is far beyond any timeout.
    catastrophic = rules(r"^(a|aa)+$|b")
    assert catastrophic.matches([{"role": "user", "content": "aaaab"}])
    assert not catastrophic.matches([{"role": "user", "content": "a" * 60 + "b"}], timeout_s=0.01)


def test_once_the_budget_is_spent_the_remaining_rules_count_as_no_match():
    ticks = iter([0.0, 0.0, 1.0])
    messages = [{"role": "user", "content": "second"}]
    both = rules("first", "second")
    assert not both.matches(messages, budget_s=0.5, clock=lambda: next(ticks))
    assert both.matches(messages)


# --- routing: side calls first, then triggers ---------------------------------------------


def test_a_side_call_is_classified_before_its_trigger_is_read():
    messages = title_call("USER: one [[mock:nope]] two [[mock:clean#a]] [[mock:bad flow#k]]")
    with pytest.raises(TriggerError):
        route_request(messages, SideCallRules())
    destination = route_request(messages, rules(r"^### Task:"))
    assert destination == Destination(SIDE_CALL_FLOW, "a", side_call=True)


def test_a_request_no_rule_matches_is_routed_by_its_trigger():
    messages = [{"role": "user", "content": "When? [[mock:clean#k1]]"}]
    destination = route_request(messages, rules(r"^### Task:"))
    assert destination == Destination("clean", "k1", turn_text="When? [[mock:clean#k1]]")


def test_a_side_call_keeps_the_key_of_the_last_keyed_trigger_it_quotes():
    history = "USER: one [[mock:clean#k1]]\nASSISTANT: ...\nUSER: two [[mock:scaffold-recover#k2]]"
    assert side_call_key(title_call(history)) == "k2"


def test_a_side_call_finds_the_key_in_a_system_message_when_its_user_message_has_none():
    messages = [
        {"role": "system", "content": "History: [[mock:clean#k3]]"},
        {"role": "user", "content": "Suggest three follow-up questions."},
    ]
    assert side_call_key(messages) == "k3"


def test_a_side_call_quoting_no_keyed_trigger_has_no_key():
    assert side_call_key(title_call("USER: hi [[mock:clean]]")) is None


# --- the journal ------------------------------------------------------------------------------


def journal_with_a_side_call() -> Journal:
    journal = Journal()
    journal.open("/v1/chat/completions").identify("k1")
    journal.open("/v1/chat/completions").identify("k1", side_call=True)
    journal.open("/v1/chat/completions").identify("k1")
    return journal


def test_an_entry_is_not_a_side_call_unless_identified_as_one():
    journal = journal_with_a_side_call()
    assert [e.to_json()["side_call"] for e in journal.entries()] == [False, True, False]


@pytest.mark.parametrize(
    ("side_calls", "seqs"), [("include", [1, 2, 3]), ("exclude", [1, 3]), ("only", [2])]
)
def test_the_journal_keeps_drops_or_keeps_only_side_calls(side_calls: Any, seqs: list[int]):
    journal = journal_with_a_side_call()
    assert [e.seq for e in journal.entries("k1", side_calls=side_calls)] == seqs


@pytest.mark.parametrize("value", ["include", "exclude", "only"])
def test_side_calls_query_takes_its_three_values(value: str):
    assert parse_journal_query([("side_calls", value)]).side_calls == value


def test_side_calls_query_defaults_to_include():
    assert parse_journal_query([]).side_calls == "include"


@pytest.mark.parametrize("value", ["no", "Exclude", "exclude "])
def test_a_bad_side_calls_query_is_refused_naming_it(value: str):
    with pytest.raises(QueryError) as caught:
        parse_journal_query([("side_calls", value)])
    assert caught.value.param == "side_calls"
    assert "include, exclude, only" in caught.value.message


# --- the client, on canned answers ----------------------------------------------------------

RECORD: dict[str, Any] = {
    "seq": 3, "path": "/v1/chat/completions", "key": "k1", "flow": "clean", "step": 1,
    "steps": 1, "request_in_turn": 1, "stream": True, "status": 200, "outcome": "completed",
    "error": None, "fault": None, "chunks_sent": 9, "received_ms": 10.5,
    "first_chunk_ms": 11.0, "ended_ms": 12.25, "disconnected_ms": None, "body": {"model": "m"},
}  # fmt: skip
"""An entry as a mock from before the `side_call` field wrote it."""


def journal_read(requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": JOURNAL_VERSION,
        "started_at": 1_700_000_000.0,
        "now_ms": 20.0,
        "requests": requests,
        "dropped": 0,
        "capacity": 1000,
    }


def canned(body: object, seen: list[httpx.Request]) -> MockClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=body)

    return MockClient("http://mock", transport=httpx.MockTransport(handler))


def test_add_side_calls_posts_the_patterns_and_types_the_answer():
    seen: list[httpx.Request] = []
    answer = {"added": ["b"], "unchanged": ["a"], "patterns": ["a", "b"], "max_patterns": 32}
    added = canned(answer, seen).add_side_calls(("a", "b"))
    assert added == SideCallsAdded(("b",), ("a",), ("a", "b"), 32)
    assert (seen[0].method, seen[0].url.path) == ("POST", "/_mock/side-calls")
    assert json.loads(seen[0].content) == {"patterns": ["a", "b"]}


def test_side_calls_lists_the_patterns():
    seen: list[httpx.Request] = []
    assert canned({"patterns": ["a"], "max_patterns": 32}, seen).side_calls() == ("a",)
    assert (seen[0].method, seen[0].url.path) == ("GET", "/_mock/side-calls")


def test_requests_sends_the_side_calls_filter():
    seen: list[httpx.Request] = []
    canned(journal_read([]), seen).requests("k1", side_calls="exclude")
    assert dict(seen[0].url.params) == {"key": "k1", "side_calls": "exclude"}


def test_a_record_reads_side_call_and_defaults_it_to_false():
    marked = {**RECORD, "side_call": True}
    seen: list[httpx.Request] = []
    read = canned(journal_read(requests=[marked, RECORD]), seen).requests()
    assert [r.side_call for r in read.requests] == [True, False]
    assert read.version == JOURNAL_VERSION
    assert read.requests[1] == JournalRecord(**RECORD)


# --- settings and the command line ----------------------------------------------------------


def test_build_settings_keeps_the_rules_once_each():
    settings = build_settings(side_calls=["^a", "^b", "^a"])
    assert settings.side_calls == ("^a", "^b")


def test_build_settings_refuses_a_bad_rule():
    with pytest.raises(SideCallsRefused):
        build_settings(side_calls=["("])


def test_side_call_option_is_repeatable():
    assert parse_args(["--side-call", "^a", "--side-call", "b"]).side_calls == ["^a", "b"]


def test_a_bad_side_call_option_stops_the_start_naming_the_rule(
    capsys: pytest.CaptureFixture[str],
):
    assert main(["--side-call", "(oops", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "--side-call" in err
    assert "'(oops' is not a valid regular expression" in err
