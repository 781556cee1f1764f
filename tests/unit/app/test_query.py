"""A question as search terms: meaningful words, no trigger, a safe FTS5 expression."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold_guard.app.rag.index import NotesIndex
from scaffold_guard.app.rag.query import MAX_QUERY_TERMS, match_expression, query_terms


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("When do backups run?", ["backups", "run"]),
        ("How do I restore THE backup, the BACKUP?", ["restore", "backup"]),
        ("what's the deal", ["deal"]),
        ("restic_backup.service", ["restic", "backup", "service"]),
        ("at 02:00", ["02", "00"]),
        ("x" * 65 + " dns", ["dns"]),
        ("", []),
        ("how do I do the what", []),
    ],
)
def test_query_terms_are_the_meaningful_words(query: str, terms: list[str]):
    assert query_terms(query) == terms


@pytest.mark.parametrize(
    "trigger",
    [
        "[[mock:tool-then-answer#t1a2b3c4d5e6]]",
        "[[mock:clean]]",
        "[[MOCK:slow#k_1-2]]",
        "[[mock:clean#typo[1]]",
        "[[mock:unclosed",
    ],
)
def test_a_mock_trigger_is_not_part_of_the_question(sample_index: NotesIndex, trigger: str):
    question = "When do the backups run and how are they verified?"
    assert query_terms(f"{question} {trigger}") == query_terms(question)
    assert sample_index.search(f"{trigger}{question}") == sample_index.search(question)


def test_other_double_brackets_are_words():
    assert query_terms("what does [[backups]] say") == ["backups", "say"]


def test_query_terms_are_capped():
    words = " ".join(f"word{n}" for n in range(100))
    assert len(query_terms(words)) == MAX_QUERY_TERMS


def test_match_expression_quotes_and_ors_each_term():
    expression = match_expression('backup" NEAR(restic* AND zfs) -x')
    assert expression == '"backup" OR "near" OR "restic" OR "zfs"'


@pytest.mark.parametrize("query", ["", "   ", "the a how do I", "?!.,;:", "'s"])
def test_empty_or_stop_word_only_queries_find_nothing(sample_index: NotesIndex, query: str):
    assert match_expression(query) is None
    assert sample_index.search(query) == []


HOSTILE = [
    '"',
    '""',
    "'",
    "*",
    "backup*",
    '"backup',
    "NEAR(backup restic)",
    "NEAR/2",
    "backup AND",
    "AND OR NOT",
    "(",
    ")",
    "-backup",
    "+restic",
    "^backup",
    "trail:backup",
    "{trail body}: backup",
    "'; DROP TABLE notes_sections; --",
    "backup\x00restic",
    "🔥 backup 🔥",
    "e\u0301",
    "_",
    "backup OR",
    ":::",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_break_the_fts_syntax(sample_index: NotesIndex, query: str):
    assert isinstance(sample_index.search(query), list)


@given(st.text(max_size=200))
def test_any_text_is_a_valid_query(sample_index: NotesIndex, query: str):
    hits = sample_index.search(query)
    assert all(h.path.startswith("/homelab/") for h in hits)
