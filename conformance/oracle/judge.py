"""The clauses' judgement of a played turn: what the page showed against the flow's expected
outcome, what it must never have shown, the log's count, and which clause judges a family
flow. conformance/test_contract.py is the clause tests over these.

Deliberate choices:
- What a turn must show, and how many upstream requests it must make, comes from the
  flow's own `expect` block in the mock (conformance/oracle/expected.py), never from a
  guardrail implementation; a flow the mock states no outcome for fails the test.
- Optional clauses skip, with the reason, where the profile does not declare the
  capability; a core clause never skips.
- Shown text is compared with white space folded: a page's markup may break or indent it.
- A turn that ended at an error outside every message with no message (a toast) is judged
  by that error's text; a clause that needs the answer's text says the page showed none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.browser.chat import TurnView
from conformance.browser.recording import excerpt
from conformance.oracle.clauses import MALFORMED_REPLY, MARKERS
from conformance.oracle.expected import Expected
from conformance.oracle.guard_log import tally_problem, unmarked_problem, wait_for_tally
from conformance.oracle.logs import logged_line
from conformance.oracle.played import Play, PlayFlow
from conformance.oracle.target import Target
from conformance.oracle.turn_requests import corrected, count_problem
from conformance.profiles.model import Capability, Profile


def by_clause(*pairs: tuple[str, str]) -> list[object]:
    """A test's `(clause, flow)` parameters, each marked with its clause."""
    return [pytest.param(clause, flow, marks=pytest.mark.clause(clause)) for clause, flow in pairs]


def needs(target: Target, capability: Capability) -> None:
    if not target.profile.has(capability):
        pytest.skip(f"the profile does not declare the {capability!r} capability")


def expected(target: Target, flow: str) -> Expected:
    want = target.upstream.expected(flow)
    if want is None:
        pytest.fail(f"the mock at {target.mock_url} has no expected outcome for flow {flow!r}")
    return want


def normalized(text: str) -> str:
    return " ".join(text.split())


def words(text: str) -> str:
    """The letters and digits of `text`, in order: what no markdown rendering changes."""
    return "".join(ch for ch in text if ch.isalnum())


def shown_as_expected(play_flow: PlayFlow, target: Target, flow: str, clause: str) -> Play:
    """The flow's play, once its turn ended done showing what the flow expects."""
    play = play_flow(flow)
    assert_done_showing(play.view, expected(target, flow), flow, clause)
    return play


def assert_done_showing(view: TurnView, want: Expected, flow: str, clause: str = "") -> None:
    """The turn ended done (not in the error state), showing what `want` says."""
    assert_ended_done(view, flow, clause)
    assert_shown(view, want, flow)


def assert_ended_done(view: TurnView, flow: str, clause: str = "") -> None:
    """The turn ended done, with a message: not in the error state."""
    where = f"{clause}: " if clause else ""
    assert view.has_message, f"{where}flow {flow!r}: {view.no_message_text()}"
    assert view.state == "done", f"{where}flow {flow!r} ended in the error state: {view.error!r}"


def assert_shown(view: TurnView, want: Expected, flow: str) -> None:
    """The turn's message shows what `want` says (white space folded)."""
    assert view.has_message, f"flow {flow!r}: {view.no_message_text()}"
    assert normalized(view.answer) == normalized(want.shown), (
        f"flow {flow!r}: the page showed {view.answer!r}, the contract wants {want.shown!r}"
    )


def assert_malformed_reply(view: TurnView, profile: Profile, where: str) -> None:
    """The turn ended in the error state showing the malformed-reply copy, compared as the
    profile's `[error_text]` says (exactly, by default)."""
    assert view.state == "error", f"{where}: the turn did not end in the error state"
    assert profile.error_text.matches(view.error, MALFORMED_REPLY), (
        f"{where}: the error shows {view.error!r}, the contract wants"
        f" {profile.error_text.describe(MALFORMED_REPLY)}"
    )


def assert_turn_ends_as_expected(play: Play, want: Expected, profile: Profile) -> None:
    """The turn ends as `want` says: its state and shown text (or the malformed-reply
    error), its request count, and one recovery or none."""
    flow, view = play.flow, play.view
    if want.error:
        assert_malformed_reply(view, profile, f"flow {flow!r}")
    else:
        assert_done_showing(view, want, flow)
    entries = play.requests()
    assert len(entries) == want.requests, count_problem(entries, flow, want.requests)
    recoveries = len(corrected(entries))
    assert recoveries == (1 if want.recovery else 0), (
        f"flow {flow!r}: {recoveries} requests carried the correction line, the flow"
        f" expects {'one recovery' if want.recovery else 'none'}"
    )


def assert_never_shown(play: Play, want: Expected) -> None:
    """No marker, and not the flow's canary, in anything the page ever showed."""
    assert play.recorder_live, "the DOM recorder is not live: it missed the kit's own marker"
    seen = play.recorded
    for marker in MARKERS:
        assert marker not in seen, (
            f"flow {play.flow!r}: {marker!r} reached the page: {_around(seen, marker)}"
        )
    if want.canary:
        assert want.canary not in seen, (
            f"flow {play.flow!r}: the markup's canary {want.canary!r} reached the page:"
            f" {_around(seen, want.canary)}"
        )


def _around(text: str, needle: str) -> str:
    return repr(excerpt(text, needle, 80))


# --- G10: the log's count -----------------------------------------------------------------


def assert_logged_count(target: Target, play: Play, want: Expected) -> None:
    """The turn's log line counts exactly the characters of markup the flow strips (G10):
    the app's own line, or the guard proxy's lines for the turn's requests."""
    assert target.log_file is not None
    if target.log_source == "guard":
        assert_guard_count(target, target.log_file, play, want)
        return
    pattern = target.profile.log.pattern(play.view.turn_id)
    found = logged_line(target.log_file, play.log_offset, pattern, target.timeout_s)
    assert found is not None, (
        f"G10: no log line matching {pattern.pattern!r} was written for the turn"
        f" within {target.timeout_s:g} s of its end"
    )
    assert int(found.group(1)) == want.stripped_chars, (
        f"G10: flow {play.flow!r} logged scaffold_stripped={found.group(1)}, the flow's markup"
        f" adds up to {want.stripped_chars}"
    )


def assert_guard_count(target: Target, log: Path, play: Play, want: Expected) -> None:
    """G10 behind the guard proxy: the guard's lines for the turn's requests (tied by the
    request id the mock journaled) add up to the flow's count (conformance/oracle/
    guard_log.py)."""
    entries = play.requests()
    ids = [entry.request_id for entry in entries if entry.request_id is not None]
    assert len(ids) == len(entries), (
        f"G10: {unmarked_problem(len(entries) - len(ids), len(entries))}"
    )
    found = wait_for_tally(log, play.log_offset, ids, target.timeout_s)
    problem = tally_problem(found, log, target.timeout_s)
    assert problem is None, f"G10: {problem}"
    assert found.stripped == want.stripped_chars, (
        f"G10: flow {play.flow!r}: the guard logged scaffold_stripped={found.stripped} over the"
        f" turn's {found.lines} request line(s), the flow's markup adds up to {want.stripped_chars}"
    )


# --- G13, G15: which clause judges a family flow ----------------------------------------------


def model_of(play: Play) -> object:
    """The model name the turn's first request asked the mock for (None without one)."""
    entries = play.requests()
    return entries[0].body.get("model") if entries else None


def family_turn(
    clause: str, flow: str, conformance_play: PlayFlow, target: Target
) -> tuple[Play, Expected, object]:
    """A family flow's play, its outcome and the model the app asked for, or a skip when
    the other clause judges it: G13 where the model is of a family that writes the flow's
    markup (the mock's family table; its markup is stripped), G15 where it is not (its
    markup is text)."""
    want = expected(target, flow)
    play = conformance_play(flow)
    model = model_of(play)
    covered = want.family is not None and want.strips_for(model)
    if clause == "G13" and not covered:
        pytest.skip(
            f"the app asks the mock for model {model!r}, of no family that writes"
            f" {want.family}'s markup; for it this markup is text (G15). Serve a"
            f" {want.family} model name to check it (the reference app: --reference-model)"
        )
    if clause == "G15" and covered:
        pytest.skip(
            f"the app asks the mock for model {model!r}, of a family that writes"
            f" {want.family}'s markup: G13 judges this flow"
        )
    return play, want, model
