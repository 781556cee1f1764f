"""The query of a journal read: what it selects, when it waits, and every way it is refused."""

from __future__ import annotations

import pytest

from mock_llm.journal.query import (
    DEFAULT_TIMEOUT_MS,
    MAX_SETTLE_MS,
    MAX_TIMEOUT_MS,
    JournalQuery,
    QueryError,
    parse_journal_query,
)


def test_no_parameters_read_everything_at_once():
    assert parse_journal_query([]) == JournalQuery()


def test_key_and_flow_select():
    query = parse_journal_query([("key", "k1"), ("flow", "clean")])
    assert (query.key, query.flow, query.settle_ms) == ("k1", "clean", None)


def test_settle_read_takes_the_default_timeout():
    query = parse_journal_query([("key", "k1"), ("settle_ms", "250")])
    assert (query.settle_ms, query.timeout_ms) == (250, DEFAULT_TIMEOUT_MS)


def test_settle_read_takes_its_own_timeout_up_to_the_cap():
    query = parse_journal_query(
        [("key", "k"), ("settle_ms", str(MAX_SETTLE_MS)), ("timeout_ms", str(MAX_TIMEOUT_MS))]
    )
    assert (query.settle_ms, query.timeout_ms) == (MAX_SETTLE_MS, MAX_TIMEOUT_MS)


def test_zero_is_a_valid_settle_and_timeout():
    query = parse_journal_query([("key", "k"), ("settle_ms", "0"), ("timeout_ms", "0")])
    assert (query.settle_ms, query.timeout_ms) == (0, 0)


@pytest.mark.parametrize(
    ("params", "param", "fragment"),
    [
        ([("key", "k"), ("settle_ms", "abc")], "settle_ms", "whole number of milliseconds"),
        ([("key", "k"), ("settle_ms", "-1")], "settle_ms", "whole number of milliseconds"),
        ([("key", "k"), ("settle_ms", "1.5")], "settle_ms", "whole number of milliseconds"),
        ([("key", "k"), ("settle_ms", "1e3")], "settle_ms", "whole number of milliseconds"),
        ([("key", "k"), ("settle_ms", " 5")], "settle_ms", "whole number of milliseconds"),
        ([("key", "k"), ("settle_ms", "\u0663")], "settle_ms", "whole number of milliseconds"),
        ([("key", "k"), ("settle_ms", "30001")], "settle_ms", "at most 30000"),
        ([("key", "k"), ("settle_ms", "9" * 5000)], "settle_ms", "at most 30000"),
        (
            [("key", "k"), ("settle_ms", "5"), ("timeout_ms", "60001")],
            "timeout_ms",
            "at most 60000",
        ),
        ([("key", "k"), ("settle_ms", "5"), ("timeout_ms", "soon")], "timeout_ms", "whole"),
        ([("settle_ms", "5")], "settle_ms", "give its 'key' too"),
        ([("key", "k"), ("timeout_ms", "5")], "timeout_ms", "give 'settle_ms' too"),
        ([("settle", "500"), ("key", "k")], "settle", "Unknown query parameter 'settle'"),
        ([("key", "a"), ("key", "b")], "key", "more than once"),
        ([("key", "")], "key", "is empty"),
        ([("key", "k"), ("settle_ms", "")], "settle_ms", "is empty"),
    ],
)
def test_bad_query_is_refused_naming_the_parameter(
    params: list[tuple[str, str]], param: str, fragment: str
):
    with pytest.raises(QueryError) as caught:
        parse_journal_query(params)
    assert caught.value.param == param
    assert fragment in caught.value.message
