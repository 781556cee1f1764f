"""The rule that tells a turn's lost evidence from a full journal
(conformance.oracle.upstream.Mark), on journal reads built by hand. Against a real mock that
another client floods: tests/integration/conformance/test_kit_lost_evidence.py.
"""

from __future__ import annotations

from conformance.oracle.upstream import Mark
from mock_llm.client import JournalRead


def read(dropped: int, first_seq: int | None = None, next_seq: int | None = None) -> JournalRead:
    return JournalRead(2, 0.0, 0.0, (), dropped, 5, first_seq=first_seq, next_seq=next_seq)


def test_a_journal_that_still_holds_the_turns_first_seq_lost_nothing_of_it():
    assert not Mark(next_seq=10, dropped=4).lost(read(9, first_seq=10, next_seq=15))


def test_a_journal_whose_oldest_entry_is_past_the_turns_start_lost_some_of_it():
    assert Mark(next_seq=10, dropped=4).lost(read(10, first_seq=11, next_seq=16))


def test_a_mock_that_does_not_say_what_it_holds_is_judged_by_its_dropped_count():
    assert not Mark(next_seq=None, dropped=4).lost(read(4))
    assert Mark(next_seq=None, dropped=4).lost(read(5))


def test_a_journal_that_dropped_nothing_since_the_turn_says_it_was_cleared():
    problem = Mark(next_seq=10, dropped=4).problem("k1", read(0, first_seq=12, next_seq=12))
    assert "(it was cleared since; it keeps 5 entries)" in problem
