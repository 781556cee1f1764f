from __future__ import annotations

from mock_llm.play.turns import TurnTracker


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def steps_played(tracker: TurnTracker, n: int, **turn: object) -> list[int]:
    return [tracker.advance(**turn).step_index for _ in range(n)]  # type: ignore[arg-type]


def test_keyed_turn_plays_steps_in_order_then_repeats_the_last():
    tracker = TurnTracker()
    assert steps_played(tracker, 5, flow="f", step_count=3, key="k", text="x") == [0, 1, 2, 2, 2]


def test_keyed_turn_counts_every_request():
    tracker = TurnTracker()
    numbers = [tracker.advance("f", 2, "k", "x").request_number for _ in range(4)]
    assert numbers == [1, 2, 3, 4]


def test_keys_are_independent_turns():
    tracker = TurnTracker()
    assert tracker.advance("f", 2, "a", "x").step_index == 0
    assert tracker.advance("f", 2, "b", "x").step_index == 0
    assert tracker.advance("f", 2, "a", "x").step_index == 1


def test_same_key_in_another_flow_is_another_turn():
    tracker = TurnTracker()
    tracker.advance("f", 2, "k", "x")
    assert tracker.advance("g", 2, "k", "x").step_index == 0


def test_keyless_turn_starts_over_after_playing_all_steps():
    tracker = TurnTracker()
    assert steps_played(tracker, 5, flow="f", step_count=2, key=None, text="t") == [0, 1, 0, 1, 0]


def test_keyless_turn_starts_over_after_a_quiet_spell():
    clock = FakeClock()
    tracker = TurnTracker(quiet_reset_s=5, clock=clock)
    assert tracker.advance("f", 3, None, "t").step_index == 0
    clock.now += 4.9
    assert tracker.advance("f", 3, None, "t").step_index == 1
    clock.now += 5.1
    assert tracker.advance("f", 3, None, "t").step_index == 0


def test_keyed_turn_ignores_the_quiet_spell():
    clock = FakeClock()
    tracker = TurnTracker(quiet_reset_s=1, clock=clock)
    tracker.advance("f", 3, "k", "t")
    clock.now += 60
    assert tracker.advance("f", 3, "k", "t").step_index == 1


def test_keyless_turns_differ_by_text():
    tracker = TurnTracker()
    tracker.advance("f", 2, None, "one")
    assert tracker.advance("f", 2, None, "two").step_index == 0


def test_tracker_forgets_least_recently_used_turns_beyond_capacity():
    tracker = TurnTracker(capacity=2)
    tracker.advance("f", 3, "a", "")
    tracker.advance("f", 3, "b", "")
    tracker.advance("f", 3, "a", "")
    tracker.advance("f", 3, "c", "")
    assert len(tracker) == 2
    assert tracker.advance("f", 3, "a", "").step_index == 2
    assert tracker.advance("f", 3, "b", "").step_index == 0


def test_a_keyless_trigger_retyped_before_its_flow_ended_continues_the_earlier_turn():
    # Pins what docs/mock_llm.md says (issue 11 corrected it): the mock cannot tell a new
    # question from another request of the same turn, so only a fresh KEY starts over.
    clock = FakeClock()
    tracker = TurnTracker(quiet_reset_s=5, clock=clock)
    assert tracker.advance("tool-then-answer", 2, None, "t").step_index == 0  # no tools: done
    clock.now += 1
    assert tracker.advance("tool-then-answer", 2, None, "t").step_index == 1  # typed again
    assert tracker.advance("tool-then-answer", 2, "fresh", "t").step_index == 0
