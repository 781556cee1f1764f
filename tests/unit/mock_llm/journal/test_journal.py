from __future__ import annotations

from mock_llm.journal.store import JOURNAL_VERSION, MAX_REQUEST_ID_CHARS, Journal, MockClock


def fake_clock(
    start: float = 100.0, wall: float = 1_700_000_000.0
) -> tuple[MockClock, list[float]]:
    """A clock whose monotonic source reads `now[0]` (seconds); move it by setting now[0]."""
    now = [start]
    return MockClock(monotonic=lambda: now[0], wall=lambda: wall), now


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
    clock, now = fake_clock()
    entry = Journal(clock=clock).open("/p")
    now[0] += 0.25
    entry.finish("client_disconnected")
    now[0] += 1
    entry.finish("completed")
    assert entry.outcome == "client_disconnected"
    assert entry.ended_ms == entry.disconnected_ms == 250.0


def test_first_chunk_time_is_taken_at_the_first_chunk():
    clock, now = fake_clock()
    entry = Journal(clock=clock).open("/p")
    entry.note_chunks(0)
    assert entry.first_chunk_ms is None
    now[0] += 0.01
    entry.note_chunks(3)
    now[0] += 0.01
    entry.note_chunks(1)
    assert entry.first_chunk_ms == 10.0
    assert entry.chunks_sent == 4


def test_every_time_field_is_on_the_mocks_clock_since_its_start():
    clock, now = fake_clock(start=500.0)
    journal = Journal(clock=clock)
    now[0] += 2
    entry = journal.open("/p")
    now[0] += 0.5
    entry.note_chunks(1)
    now[0] += 1
    entry.finish("completed")
    assert (entry.received_ms, entry.first_chunk_ms, entry.ended_ms) == (2000.0, 2500.0, 3500.0)
    assert entry.disconnected_ms is None


def test_a_finished_entrys_last_activity_is_its_end():
    clock, now = fake_clock()
    entry = Journal(clock=clock).open("/p")
    assert entry.last_activity_ms == entry.received_ms == 0.0
    now[0] += 3
    entry.finish("completed")
    assert entry.last_activity_ms == 3000.0


def test_entry_json_names_every_documented_field():
    clock, now = fake_clock()
    journal = Journal(clock=clock)
    now[0] += 0.0125
    data = journal.open("/v1/chat/completions").to_json()
    assert data["received_ms"] == 12.5
    assert data["outcome"] == "in_progress"
    assert set(data) == {
        "seq", "path", "key", "flow", "step", "steps", "request_in_turn", "stream", "status",
        "outcome", "error", "fault", "chunks_sent", "received_ms", "first_chunk_ms", "ended_ms",
        "disconnected_ms", "body", "side_call", "api", "request_id",
    }  # fmt: skip
    assert data["api"] == "openai"


def test_a_read_carries_the_schema_version_and_the_clock():
    clock, now = fake_clock(wall=1_700_000_000.0)
    journal = Journal(capacity=7, clock=clock)
    journal.open("/p")
    now[0] += 4
    read = journal.to_json(journal.entries())
    assert read["version"] == JOURNAL_VERSION == 2
    assert (read["started_at"], read["now_ms"]) == (1_700_000_000.0, 4000.0)
    assert (read["dropped"], read["capacity"], len(read["requests"])) == (0, 7, 1)
    assert "settled" not in read


def test_a_settle_read_says_whether_it_settled():
    journal = Journal()
    assert journal.to_json([], settled=False)["settled"] is False


def recorder(journal: Journal) -> list[str]:
    seen: list[str] = []
    journal.on_change = lambda: seen.append("change")
    return seen


def test_arrival_identification_end_and_clearing_each_signal_a_change():
    journal = Journal()
    seen = recorder(journal)
    entry = journal.open("/p")
    entry.identify("k1")
    entry.finish("completed")
    journal.clear()
    assert len(seen) == 4


def test_a_second_finish_signals_nothing():
    journal = Journal()
    entry = journal.open("/p")
    entry.finish("completed")
    seen = recorder(journal)
    entry.finish("fault")
    assert seen == []


def test_an_entry_is_unidentified_until_its_key_is_known_or_it_ends():
    journal = Journal()
    first, second = journal.open("/p"), journal.open("/p")
    assert journal.any_unidentified()
    first.identify(None)
    assert journal.any_unidentified()
    second.finish("rejected", "bad body")
    assert not journal.any_unidentified()


def test_identify_names_the_turn():
    entry = Journal().open("/p")
    entry.identify("k9")
    assert (entry.key, entry.identified) == ("k9", True)


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


def test_a_read_says_which_entries_the_journal_still_holds():
    journal = Journal(capacity=3)
    for _ in range(5):
        journal.open("/p")
    read = journal.to_json([])
    assert (read["first_seq"], read["next_seq"]) == (3, 6)


def test_an_empty_journal_holds_from_the_next_entry_on():
    journal = Journal()
    assert (journal.first_seq, journal.next_seq) == (1, 1)
    journal.open("/p")
    journal.clear()
    assert (journal.first_seq, journal.next_seq) == (2, 2)


def test_an_entry_keeps_the_requests_id_header():
    journal = Journal()
    assert journal.open("/p", request_id="guard-1").request_id == "guard-1"
    assert journal.open("/p").request_id is None


def test_a_long_request_id_is_kept_only_up_to_its_bound():
    entry = Journal().open("/p", request_id="x" * (MAX_REQUEST_ID_CHARS + 50))
    assert entry.request_id == "x" * MAX_REQUEST_ID_CHARS
