"""When a turn has settled, and the wait for it: woken by journal changes, bounded by its timeout.

The rule is checked with a fake clock. The wait is checked on a real journal and signal in
the test's event loop: `wait_all_tasks_blocked` proves the waiter is parked on the signal
before the change that must wake it, so no sleep decides a verdict, and the only timeouts
are the waits' own (0 ms, or a turn that cannot settle).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from mock_llm.journal.query import JournalQuery
from mock_llm.journal.settle import ChangeSignal, quiet_left_ms, wait_settled
from mock_llm.journal.store import Journal, JournalEntry, MockClock

from ....support.deadlines import DEADLINE_S


def entry(received_ms: float, ended_ms: float | None) -> JournalEntry:
    e = JournalEntry(seq=1, received_ms=received_ms, path="/p", key="k")
    if ended_ms is not None:
        e.outcome, e.ended_ms = "completed", ended_ms
    return e


def test_no_entry_yet_waits_for_a_change():
    assert quiet_left_ms([], now_ms=1000, settle_ms=100) is None


def test_an_entry_in_progress_waits_for_a_change():
    assert quiet_left_ms([entry(0, 50), entry(60, None)], now_ms=1000, settle_ms=100) is None


def test_a_request_still_being_read_waits_for_a_change():
    assert quiet_left_ms([entry(0, 50)], now_ms=1000, settle_ms=100, reading=True) is None


def test_quiet_is_counted_from_the_last_end_not_the_last_arrival():
    # arrived at 0, streamed until 900: at 1000 only 100 of the 300 quiet ms have passed
    assert quiet_left_ms([entry(0, 900)], now_ms=1000, settle_ms=300) == 200


def test_quiet_is_counted_from_the_latest_entry():
    assert quiet_left_ms([entry(0, 100), entry(500, 700)], now_ms=800, settle_ms=300) == 200


def test_a_turn_quiet_for_settle_ms_has_settled():
    assert quiet_left_ms([entry(0, 100)], now_ms=400, settle_ms=300) == 0


def test_settle_zero_settles_as_soon_as_nothing_is_in_progress():
    assert quiet_left_ms([entry(0, 100)], now_ms=100, settle_ms=0) == 0


async def test_a_pulse_wakes_every_waiter_and_none_is_left_registered():
    signal = ChangeSignal()
    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(signal.wait)
            await anyio.wait_all_tasks_blocked()
            assert len(signal) == 3
            signal.pulse()
    assert len(signal) == 0


async def test_a_wait_that_runs_out_leaves_nothing_registered():
    signal = ChangeSignal()
    with anyio.fail_after(DEADLINE_S):
        await signal.wait(0)
    assert len(signal) == 0


def test_a_pulse_with_no_waiter_is_harmless():
    ChangeSignal().pulse()


def served_journal() -> tuple[Journal, ChangeSignal]:
    journal, signal = Journal(clock=MockClock()), ChangeSignal()
    journal.on_change = signal.pulse
    return journal, signal


def finished_turn() -> tuple[Journal, ChangeSignal]:
    """A served journal whose turn `k` is one request, finished."""
    journal, signal = served_journal()
    request = journal.open("/p")
    request.identify("k")
    request.finish("completed")
    return journal, signal


def settle_query(settle_ms: int = 0, timeout_ms: int = int(DEADLINE_S * 1000)) -> JournalQuery:
    return JournalQuery(key="k", settle_ms=settle_ms, timeout_ms=timeout_ms)


async def answers_after(
    journal: Journal, signal: ChangeSignal, *changes: Callable[[], None]
) -> list[bool]:
    """What a wait for turn `k` answers when `changes` happen one by one while it waits: each
    only once the waiter is parked, and with no answer yet before it."""
    results: list[bool] = []

    async def wait() -> None:
        results.append(await wait_settled(journal, signal, settle_query()))

    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            for change in changes:
                await anyio.wait_all_tasks_blocked()
                assert results == []
                change()
    return results


async def test_a_waiter_is_woken_by_the_end_of_the_turns_last_request():
    journal, signal = served_journal()
    request = journal.open("/p")
    request.identify("k")

    assert await answers_after(journal, signal, lambda: request.finish("completed")) == [True]


async def test_another_turns_end_does_not_answer_the_wait():
    journal, signal = served_journal()
    mine, other = journal.open("/p"), journal.open("/p")
    mine.identify("k")
    other.identify("other")

    answers = await answers_after(
        journal, signal, lambda: other.finish("completed"), lambda: mine.finish("completed")
    )

    assert answers == [True]


async def test_a_finished_turn_settles_once_its_quiet_period_is_over():
    journal, signal = finished_turn()
    with anyio.fail_after(DEADLINE_S):
        assert await wait_settled(journal, signal, settle_query(settle_ms=50)) is True


async def test_a_turn_with_no_request_does_not_settle_and_the_wait_runs_out():
    journal, signal = served_journal()
    with anyio.fail_after(DEADLINE_S):
        assert await wait_settled(journal, signal, settle_query(timeout_ms=0)) is False


async def test_a_finished_turn_settles_at_once_with_settle_zero():
    journal, signal = finished_turn()
    with anyio.fail_after(DEADLINE_S):
        assert await wait_settled(journal, signal, settle_query(timeout_ms=0)) is True


@pytest.mark.parametrize("outcome", ["in_progress", "unidentified"])
async def test_a_turn_still_moving_when_the_wait_runs_out_is_not_settled(outcome: str):
    journal, signal = served_journal()
    journal.open("/p").identify("k")
    if outcome == "unidentified":
        journal.entries()[0].finish("completed")
        journal.open("/p")  # a request whose key is not read yet could be this turn's
    with anyio.fail_after(DEADLINE_S):
        assert await wait_settled(journal, signal, settle_query(timeout_ms=0)) is False
