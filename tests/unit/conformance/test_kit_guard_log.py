"""G10 behind the guard proxy, the mapping alone (conformance/oracle/guard_log.py): the guard's log
lines, tied to a turn by the request ids the mock journaled, summed over the turn's requests.

The whole path, a kit run against an app behind the guard with G10 judged:
tests/conformance_selftest/test_proxy_target.py.
"""

from __future__ import annotations

from pathlib import Path

from conformance.oracle.guard_log import (
    GuardLine,
    guard_lines,
    tally,
    tally_problem,
    unmarked_problem,
)
from conformance.oracle.logs import lines_after

LOG = Path("guard.log")


def line(request_id: str, stripped: int = 0, retries: int = 0, route: str = "chat") -> str:
    return (
        f"guard: {route} status=200 stream=true retries={retries} total_ms=9"
        f" scaffold_stripped={stripped} profiles=auto:unknown request_id={request_id}"
    )


def test_a_guarded_requests_line_is_read_with_its_counts_and_id():
    assert guard_lines(line("guard-1", stripped=97, retries=1)) == [
        GuardLine("chat", 1, 97, "guard-1")
    ]


def test_a_line_that_names_the_cause_of_a_failure_is_read_too():
    text = (
        "guard: chat status=0 error=ClientConnectorError reused=false stream=true retries=0"
        " total_ms=2 scaffold_stripped=0 profiles=auto:unknown request_id=r9"
    )
    assert guard_lines(text) == [GuardLine("chat", 0, 0, "r9")]


def test_fields_added_after_the_request_id_are_ignored():
    assert guard_lines(line("r1") + " region=eu")[0].request_id == "r1"


def test_warnings_pass_on_lines_and_lines_of_a_guard_before_request_ids_are_no_lines():
    text = "\n".join([
        "agent: stripped 97 chars of tool-scaffolding in round 1: '<|tool_call_start|>'",
        "guard: pass-on status=0 error=ClientConnectorError reused=false",
        "guard: chat status=200 stream=true retries=0 total_ms=4 scaffold_stripped=0"
        " profiles=auto:unknown",
    ])  # fmt: skip
    assert guard_lines(text) == []


def test_a_turns_count_is_the_sum_over_the_lines_of_its_request_ids():
    lines = guard_lines("\n".join([line("a", 97, retries=1), line("other", 50), line("b", 3)]))
    found = tally(lines, ["a", "a", "b"])  # a's request and its recovery, then b's
    assert (found.stripped, found.lines, found.accounted, found.complete) == (100, 2, 3, True)
    assert tally_problem(found, LOG, 5) is None


def test_a_request_id_with_no_line_yet_leaves_the_tally_incomplete_and_says_which():
    found = tally(guard_lines(line("a")), ["a", "b"])
    assert (found.complete, found.missing) == (False, ("b",))
    assert tally_problem(found, LOG, 5) == (
        "the guard's log guard.log has no line for the turn's request id b within 5 s of its"
        " end: is it the log (stderr) of the guard proxy in front of this app?"
    )


def test_lines_that_account_for_fewer_requests_than_the_turn_made_are_incomplete():
    found = tally(guard_lines(line("a")), ["a", "a"])  # the client reused the id in the turn
    assert not found.complete
    assert tally_problem(found, LOG, 5) == (
        "the guard's lines for the turn account for 1 of its 2 upstream requests within 5 s"
        " of its end"
    )


def test_more_lines_than_the_turn_has_requests_mean_the_client_reuses_its_id():
    found = tally(guard_lines("\n".join([line("same", 97), line("same", 0)])), ["same"])
    assert found.ids_reused
    problem = tally_problem(found, LOG, 5)
    assert problem is not None
    assert "the app reuses its X-Request-Id across requests" in problem


def test_requests_that_came_past_the_guard_are_named_as_such():
    assert unmarked_problem(1, 2).startswith(
        "1 of the turn's 2 upstream requests reached the mock without an X-Request-Id"
    )


def test_only_what_was_written_after_the_offset_is_read(tmp_path: Path):
    log = tmp_path / "guard.log"
    log.write_text(line("earlier") + "\n" + line("now") + "\n", encoding="utf-8")
    offset = len(line("earlier")) + 1
    assert [g.request_id for g in guard_lines(lines_after(log, offset))] == ["now"]


def test_a_log_not_written_yet_reads_as_nothing(tmp_path: Path):
    assert lines_after(tmp_path / "not-yet.log", 0) == ""
