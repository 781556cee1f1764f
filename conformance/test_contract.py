"""The guardrail contract, clause by clause, against the target's page, mock and log.

Every turn asks its question with a fresh KEY (`[[mock:FLOW#KEY]]`), so turns never mix,
also under pytest-xdist against one shared mock. Each flow is played once per worker and
every clause that looks at it judges that one play (conformance/run/plays.py); only Stop (G11)
drives the page itself. What a turn must show, and how many upstream requests it must make,
comes from the flow's own `expect` block in the mock, never from a guardrail
implementation. Each test is marked with its clause; optional clauses skip, with the
reason, where the profile does not declare the capability. The judgement these tests call
is the oracle's (conformance/oracle/judge.py, turn_requests.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from conformance.browser.chat import ChatPage
from conformance.oracle.clauses import CORRECTION, FAMILY_FLOWS, LOOKALIKE_FLOWS, SCAFFOLD_FLOWS
from conformance.oracle.judge import (
    assert_ended_done,
    assert_logged_count,
    assert_malformed_reply,
    assert_never_shown,
    assert_shown,
    assert_turn_ends_as_expected,
    by_clause,
    expected,
    family_turn,
    model_of,
    needs,
    shown_as_expected,
    words,
)
from conformance.oracle.played import PlayFlow
from conformance.oracle.target import Target
from conformance.oracle.turn_requests import (
    assert_one_recovery,
    assert_one_request_no_correction,
    corrected,
    count_problem,
    messages_of,
    tool_round_of,
)
from conformance.run.questions import question

# --- G1, G4, G6, G7, G8: what the page shows, and one request -------------------------------------


@pytest.mark.clause("G1", flow="clean")
def test_g1_a_clean_turn_passes_through_unchanged(
    conformance_play: PlayFlow, conformance_wired: Target
):
    play = shown_as_expected(conformance_play, conformance_wired, "clean", "G1")
    assert_one_request_no_correction(play.requests(), "clean")


@pytest.mark.parametrize(
    ("clause", "flow"),
    by_clause(("G4", "scaffold-mixed"), ("G6", "scaffold-standalone"), ("G7", "lookalike"),
              ("G8", "partial-tail"), ("G8", "unterminated")),
)  # fmt: skip
def test_the_page_shows_exactly_the_clean_remainder_with_no_recovery(
    clause: str, flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    entries = shown_as_expected(conformance_play, conformance_wired, flow, clause).requests()
    assert len(entries) == 1, count_problem(entries, flow, 1)


# --- G2, G5: one recovery -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clause", "flow"), by_clause(("G2", "scaffold-recover"), ("G5", "scaffold-split"))
)
def test_a_scaffold_only_answer_gets_exactly_one_corrected_recovery(
    clause: str, flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    play = shown_as_expected(conformance_play, conformance_wired, flow, clause)
    assert_one_recovery(play.requests(), flow)


# --- G3: the terminal error -----------------------------------------------------------------------


@pytest.mark.clause("G3", flow="scaffold-repeat")
def test_g3_an_empty_recovery_ends_in_the_error_state_and_the_page_stays_usable(
    conformance_play: PlayFlow, conformance_wired: Target
):
    play = conformance_play("scaffold-repeat")  # its play asks a clean question after it
    assert_malformed_reply(play.view, conformance_wired.profile, "G3")
    assert_one_recovery(play.requests(), "scaffold-repeat")
    again = play.follow_up
    assert again is not None, (
        f"G3: after the error, the next question failed: {play.follow_up_error}"
    )
    assert again.state == "done", "G3: after the error, the next question got no answer"
    assert_shown(again, expected(conformance_wired, "clean"), "clean")


# --- never in the page ----------------------------------------------------------------------------


@pytest.mark.clause("NEVER")
@pytest.mark.parametrize("flow", SCAFFOLD_FLOWS)
def test_raw_scaffolding_never_appears_in_the_page(
    flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    assert_never_shown(conformance_play(flow), expected(conformance_wired, flow))


# --- optional clauses -----------------------------------------------------------------------------


@pytest.mark.clause("G9", flow="thinking-scaffold")
def test_g9_thinking_is_shown_raw(conformance_play: PlayFlow, conformance_wired: Target):
    needs(conformance_wired, "thinking")
    view = conformance_play("thinking-scaffold").view
    assert "<|tool_call_start|>" in view.thinking, (
        f"G9: the thinking display was filtered: {view.thinking!r}"
    )
    assert_shown(view, expected(conformance_wired, "thinking-scaffold"), "thinking-scaffold")


@pytest.mark.clause("G10")
@pytest.mark.parametrize("flow", ["clean", "scaffold-recover", "scaffold-repeat", "scaffold-mixed"])
def test_g10_the_log_line_counts_the_stripped_characters(
    flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    if not conformance_wired.judges_log:
        pytest.skip(
            "the profile does not declare the 'log' capability (for an app behind the guard"
            " proxy, give its log with --guard-log)"
        )
    play = conformance_play(flow)
    assert_logged_count(conformance_wired, play, expected(conformance_wired, flow))


@pytest.mark.clause("G11", flow="slow")
def test_g11_stop_closes_the_upstream_stream(
    conformance_chat: ChatPage, conformance_wired: Target, conformance_key: Callable[[], str]
):
    needs(conformance_wired, "stop")
    key = conformance_key()
    conformance_wired.upstream.begin(key)
    message = conformance_chat.send(question("slow", key))
    answer = message.locator(conformance_wired.profile.selectors.answer)
    # Looked up afresh at every look: a page may replace the answer's node as it streams.
    answer.filter(has_text=re.compile(r"\S")).first.wait_for(state="attached")
    conformance_chat.stop(trial=True)  # the clock starts once the control can be clicked
    clicked_ms = conformance_wired.upstream.now_ms()
    conformance_chat.stop()
    entries = conformance_wired.upstream.requests(key)
    assert len(entries) == 1, count_problem(entries, "slow", 1)
    entry = entries[0]
    assert entry.outcome == "client_disconnected", (
        f"G11: after Stop the mock saw the stream end {entry.outcome!r}, not a disconnect"
    )
    assert entry.disconnected_ms is not None
    late_ms = entry.disconnected_ms - clicked_ms
    bound = conformance_wired.stop_within_ms  # --stop-within-ms
    assert late_ms <= bound, (
        f"G11: the mock saw the disconnect {late_ms:.0f} ms after Stop was clicked"
        f" (the contract allows {bound:g} ms)"
    )


@pytest.mark.clause("G12", flow="tool-with-scaffold")
def test_g12_a_round_with_a_real_tool_call_gets_no_recovery(
    conformance_play: PlayFlow, conformance_wired: Target
):
    needs(conformance_wired, "tools")
    play = conformance_play("tool-with-scaffold")
    view = play.view
    assert_ended_done(view, "tool-with-scaffold", "G12")
    for entry in play.requests():
        assert CORRECTION not in json.dumps(messages_of(entry), ensure_ascii=False), (
            "G12: a round that carried a real tool call was answered with a recovery request"
        )
    assert not re.search(r"<\|tool_call", view.answer), f"G12: markup shown: {view.answer!r}"


# --- G13, G15: the model families' own shapes, stripped for their models and text elsewhere ------


@pytest.mark.clause("G13")
@pytest.mark.parametrize("flow", FAMILY_FLOWS)
def test_g13_a_familys_leak_shape_is_stripped_for_a_model_of_that_family(
    flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    play, want, _ = family_turn("G13", flow, conformance_play, conformance_wired)
    assert_turn_ends_as_expected(play, want, conformance_wired.profile)
    assert_never_shown(play, want)


@pytest.mark.clause("G15")
@pytest.mark.parametrize("flow", LOOKALIKE_FLOWS)
def test_g15_another_familys_markup_is_shown_whole(
    flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    play, want, model = family_turn("G15", flow, conformance_play, conformance_wired)
    whole = want.for_model(model)  # the markup whole, or a part another family writes gone
    view = play.view
    assert_ended_done(view, flow, "G15")
    assert_never_shown(play, whole)
    assert words(view.answer) == words(whole.shown), (
        f"G15: flow {flow!r}: text was swallowed; for model {model!r} this markup is text and"
        f" the page should show {whole.shown!r}, it showed {view.answer!r} (letters and"
        " digits compared: a page's markdown may render the brackets, as `<x:y>` as a link)"
    )
    entries = play.requests()
    assert len(entries) == 1, count_problem(entries, flow, 1)
    assert not corrected(entries), f"G15: flow {flow!r}: a recovery was sent for text"


# --- G14: a real tool call is never lost ----------------------------------------------------------


@pytest.mark.clause("G14", flow="tool-with-scaffold")
def test_g14_a_real_tool_call_next_to_stripped_markup_is_still_run(
    conformance_play: PlayFlow, conformance_wired: Target
):
    needs(conformance_wired, "tools")
    play = conformance_play("tool-with-scaffold")
    entries = play.requests()
    assert len(entries) >= 2, (
        f"G14: the turn made {len(entries)} upstream request(s): the round's real tool call"
        " (read) was never answered, so the markup went and the call with it"
    )
    called, answered = tool_round_of(messages_of(entries[1]))
    assert "read" in called, (
        "G14: the request after the tool round does not carry the round's call to 'read'"
        f" in an assistant message (it carries calls to {sorted(called)})"
    )
    assert answered, "G14: the request after the tool round carries no tool result"


# --- the user's own cases (--cases) ---------------------------------------------------------------


@pytest.mark.clause("CASE")
def test_a_recorded_case_ends_as_its_flow_expects(
    flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    """One per `--cases` flow that states an outcome: what the page shows, the turn's
    requests and the one recovery, the malformed-reply error, no markup in the page, and
    the log's count where the profile has a log."""
    target = conformance_wired
    play = conformance_play(flow)
    want = expected(target, flow).for_model(model_of(play))  # a family case: by the model
    assert_turn_ends_as_expected(play, want, target.profile)
    assert_never_shown(play, want)
    if target.judges_log:
        assert_logged_count(target, play, want)
