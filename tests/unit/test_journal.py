from __future__ import annotations

from mock_llm.journal import Journal


def test_entries_keep_arrival_order_and_sequence_numbers():
    journal = Journal()
    for key in ("a", "b", "c"):
        journal.open("/v1/chat/completions").key = key
    assert [(e.seq, e.key) for e in journal.entries()] == [(1, "a"), (2, "b"), (3, "c")]


def test_entries_filter_by_key_and_flow():
    journal = Journal()
    for key, flow in (("a", "clean"), ("b", "clean"), ("a", "slow")):
        entry = journal.open("/v1/chat/completions")
        entry.key, entry.flow = key, flow
    assert [e.seq for e in journal.entries(key="a")] == [1, 3]
    assert [e.seq for e in journal.entries(key="a", flow="clean")] == [1]


def test_full_journal_drops_oldest_and_counts_them():
    journal = Journal(capacity=3)
    for _ in range(5):
        journal.open("/p")
    assert [e.seq for e in journal.entries()] == [3, 4, 5]
    assert journal.dropped == 2


def test_clear_empties_journal_but_sequence_goes_on():
    journal = Journal(capacity=2)
    for _ in range(3):
        journal.open("/p")
    journal.clear()
    assert len(journal) == 0
    assert journal.dropped == 0
    assert journal.open("/p").seq == 4


def test_an_entry_finishes_once():
    entry = Journal().open("/p")
    entry.finish("client_disconnected")
    entry.finish("completed")
    assert entry.outcome == "client_disconnected"
    assert entry.disconnected_at is not None
    assert entry.ended_ms is not None


def test_first_chunk_time_is_taken_at_the_first_chunk():
    entry = Journal().open("/p")
    entry.note_chunks(0)
    assert entry.first_chunk_ms is None
    entry.note_chunks(3)
    first = entry.first_chunk_ms
    entry.note_chunks(1)
    assert entry.first_chunk_ms == first
    assert entry.chunks_sent == 4


def test_entry_json_names_every_documented_field():
    entry = Journal(clock=lambda: 12.5).open("/v1/chat/completions")
    data = entry.to_json()
    assert data["received_at"] == 12.5
    assert data["outcome"] == "in_progress"
    assert set(data) >= {"seq", "key", "flow", "step", "body", "timings", "outcome", "chunks_sent"}
    assert set(data["timings"]) == {"first_chunk_ms", "ended_ms", "disconnected_at"}


def test_bodies_past_the_byte_budget_drop_the_oldest_entries():
    journal = Journal(capacity=100, max_body_bytes=1000)
    for i in range(4):
        journal.attach_body(journal.open("/p"), {"n": i}, 400)
    assert [e.body for e in journal.entries()] == [{"n": 2}, {"n": 3}]
    assert journal.dropped == 2


def test_newest_entry_is_kept_even_when_its_body_alone_is_over_budget():
    journal = Journal(max_body_bytes=10)
    journal.attach_body(journal.open("/p"), "big", 50)
    assert len(journal) == 1
