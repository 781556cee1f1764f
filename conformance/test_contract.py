"""The guardrail contract, clause by clause, against the target's page, mock and log.

Every turn asks its question with a fresh KEY (`[[mock:FLOW#KEY]]`), so turns never mix,
also under pytest-xdist against one shared mock. Each flow is played once per worker and
every clause that looks at it judges that one play (conformance/plays.py); only Stop (G11)
drives the page itself. What a turn must show, and how many upstream requests it must make,
comes from the flow's own `expect` block in the mock, never from a guardrail
implementation. Each test is marked with its clause; optional clauses skip, with the
reason, where the profile does not declare the capability.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from conformance.browser.chat import ChatPage, TurnView
from conformance.browser.recording import excerpt
from conformance.clauses import MALFORMED_REPLY, MARKERS
from conformance.guard_log import tally_problem, unmarked_problem, wait_for_tally
from conformance.plays import Play, question
from conformance.profiles.model import Capability, Profile
from conformance.target import Target
from conformance.upstream import Expected
from mock_llm.client import JournalRecord

CORRECTION = (
    "Your previous reply contained raw tool-call markup, which is not interpreted here."
    " Answer the user's question directly in plain text — no tool syntax."
)
LOG_POLL_S = 0.05
"""How often G10 looks at the log again while the turn's line has not been written yet."""
SCAFFOLD_FLOWS = ("scaffold-recover", "scaffold-split", "scaffold-repeat", "scaffold-mixed",
                  "scaffold-standalone", "unterminated")  # fmt: skip
FAMILY_FLOWS = ("deepseek-dsml", "deepseek-dsml-bars", "gemma-bare-call", "qwen-tool-call",
                "qwen3-coder-bare-function", "seed-oss-tool-call", "nemotron-toolcall",
                "glm-bare-arguments", "minimax-xml-call", "harmony-residue")  # fmt: skip
"""The mock's family flows: each plays one model family's own leak shape (G13)."""
LOOKALIKE_FLOWS = (*(f for f in FAMILY_FLOWS if not f.startswith("deepseek")), "echo-call")
"""The flows whose markup is text for some models (G15): the family flows that state an
`elsewhere` outcome (DeepSeek's special tokens are stripped for every model), and the
transcript echo, which reads like prose and is stripped only where a user opts in."""


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


PlayFlow = Callable[[str], Play]


def assert_done_showing(view: TurnView, want: Expected, flow: str, clause: str = "") -> None:
    """The turn ended done (not in the error state), showing what `want` says."""
    where = f"{clause}: " if clause else ""
    assert view.state == "done", f"{where}flow {flow!r} ended in the error state: {view.error!r}"
    assert_shown(view, want, flow)


def assert_shown(view: TurnView, want: Expected, flow: str) -> None:
    assert normalized(view.answer) == normalized(want.shown), (
        f"flow {flow!r}: the page showed {view.answer!r}, the contract wants {want.shown!r}"
    )


def messages_of(entry: JournalRecord) -> list[dict[str, Any]]:
    return entry.body["messages"]


def system_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def count_problem(entries: list[JournalRecord], flow: str, wanted: int) -> str:
    """What is wrong with a turn's request count, with a hint where extra calls could be side
    calls (a title, tags) the profile has not named."""
    problem = f"flow {flow!r}: {len(entries)} upstream requests, the contract wants {wanted}"
    if len(entries) > wanted:
        problem += (
            "; if the app makes extra model calls per turn (titles, tags, follow-ups), name"
            " them in the profile's [model_calls] side_calls"
        )
    return problem


def corrected(entries: list[JournalRecord]) -> list[JournalRecord]:
    """The requests that carry the correction line (recoveries)."""
    return [e for e in entries if CORRECTION in json.dumps(messages_of(e), ensure_ascii=False)]


def model_of(play: Play) -> object:
    """The model name the turn's first request asked the mock for (None without one)."""
    entries = play.requests()
    return entries[0].body.get("model") if entries else None


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


def assert_one_request_no_correction(entries: list[JournalRecord], flow: str) -> None:
    assert len(entries) == 1, count_problem(entries, flow, 1)
    assert CORRECTION not in json.dumps(messages_of(entries[0]), ensure_ascii=False), (
        f"flow {flow!r}: a request carried the correction line although nothing was stripped"
    )


def assert_one_recovery(entries: list[JournalRecord], flow: str) -> None:
    assert len(entries) == 2, count_problem(entries, flow, 2) + " (the round and one recovery)"
    first, second = messages_of(entries[0]), messages_of(entries[1])
    assert "tools" not in entries[1].body, f"flow {flow!r}: the recovery request offered tools"
    systems = [i for i, m in enumerate(second) if m.get("role") == "system"]
    assert len(systems) == 1, f"flow {flow!r}: the recovery has {len(systems)} system messages"
    first_systems = [m for m in first if m.get("role") == "system"]
    recovery_system = system_text(second[systems[0]])
    assert CORRECTION in recovery_system, f"flow {flow!r}: the recovery lacks the correction line"
    if first_systems:
        assert recovery_system.startswith(system_text(first_systems[0]).rstrip()), (
            f"flow {flow!r}: the recovery's system message does not extend the first request's"
        )
    rest = [m for m in second if m.get("role") != "system"]
    assert rest == [m for m in first if m.get("role") != "system"], (
        f"flow {flow!r}: the recovery changed the messages besides the system message"
    )


# --- G1, G4, G6, G7, G8: what the page shows, and one request -------------------------------------


@pytest.mark.clause("G1", flow="clean")
def test_g1_a_clean_turn_passes_through_unchanged(
    conformance_play: PlayFlow, conformance_wired: Target
):
    play = conformance_play("clean")
    assert_done_showing(play.view, expected(conformance_wired, "clean"), "clean", "G1")
    assert_one_request_no_correction(play.requests(), "clean")


@pytest.mark.parametrize(
    ("clause", "flow"),
    [
        pytest.param("G4", "scaffold-mixed", marks=pytest.mark.clause("G4")),
        pytest.param("G6", "scaffold-standalone", marks=pytest.mark.clause("G6")),
        pytest.param("G7", "lookalike", marks=pytest.mark.clause("G7")),
        pytest.param("G8", "partial-tail", marks=pytest.mark.clause("G8")),
        pytest.param("G8", "unterminated", marks=pytest.mark.clause("G8")),
    ],
)
def test_the_page_shows_exactly_the_clean_remainder_with_no_recovery(
    clause: str, flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    play = conformance_play(flow)
    assert_done_showing(play.view, expected(conformance_wired, flow), flow, clause)
    entries = play.requests()
    assert len(entries) == 1, count_problem(entries, flow, 1)


# --- G2, G5: one recovery -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clause", "flow"),
    [
        pytest.param("G2", "scaffold-recover", marks=pytest.mark.clause("G2")),
        pytest.param("G5", "scaffold-split", marks=pytest.mark.clause("G5")),
    ],
)
def test_a_scaffold_only_answer_gets_exactly_one_corrected_recovery(
    clause: str, flow: str, conformance_play: PlayFlow, conformance_wired: Target
):
    play = conformance_play(flow)
    assert_done_showing(play.view, expected(conformance_wired, flow), flow, clause)
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
    request id the mock journaled) add up to the flow's count (conformance/guard_log.py)."""
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


def logged_line(
    log: Path, offset: int, pattern: re.Pattern[str], within_s: float
) -> re.Match[str] | None:
    """The turn's log line among those written after `offset`, waiting for it: an app may
    write it just after the page showed the answer. None if none shows within `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        with log.open("rb") as file:
            file.seek(offset)
            lines = file.read().decode("utf-8", errors="replace").splitlines()
        found = [m for line in lines if (m := pattern.search(line))]
        if found:
            return found[-1]
        if time.monotonic() >= deadline:
            return None
        time.sleep(LOG_POLL_S)


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
    assert view.state == "done", f"G12: the turn ended in the error state: {view.error!r}"
    for entry in play.requests():
        assert CORRECTION not in json.dumps(messages_of(entry), ensure_ascii=False), (
            "G12: a round that carried a real tool call was answered with a recovery request"
        )
    assert not re.search(r"<\|tool_call", view.answer), f"G12: markup shown: {view.answer!r}"


# --- G13, G15: the model families' own shapes, stripped for their models and text elsewhere ------


def family_turn(
    clause: str, flow: str, conformance_play: PlayFlow, target: Target
) -> tuple[Play, Expected, object]:
    """A family flow's play, its outcome and the model the app asked for, or a skip when
    the other clause judges it: G13 where the model's profiles cover the flow's family
    (its markup is stripped), G15 where they do not (its markup is text)."""
    want = expected(target, flow)
    play = conformance_play(flow)
    model = model_of(play)
    covered = want.family is not None and want.strips_for(model)
    if clause == "G13" and not covered:
        pytest.skip(
            f"the app asks the mock for model {model!r}, whose markup profiles do not cover"
            f" {want.family}'s; for it this markup is text (G15). Serve a {want.family} model"
            " name to check it (the reference app: --reference-model)"
        )
    if clause == "G15" and covered:
        pytest.skip(
            f"the app asks the mock for model {model!r}, whose markup profiles cover"
            f" {want.family}'s: G13 judges this flow"
        )
    return play, want, model


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
    whole = want.for_model(model)
    view = play.view
    assert view.state == "done", f"G15: flow {flow!r} ended in the error state: {view.error!r}"
    assert words(view.answer) == words(whole.shown), (
        f"G15: flow {flow!r}: text was swallowed; for model {model!r} this markup is text and"
        f" the page should show {whole.shown!r}, it showed {view.answer!r} (letters and"
        " digits compared: a page's markdown may render the brackets, as `<x:y>` as a link)"
    )
    entries = play.requests()
    assert len(entries) == 1, count_problem(entries, flow, 1)
    assert not corrected(entries), f"G15: flow {flow!r}: a recovery was sent for text"


def words(text: str) -> str:
    """The letters and digits of `text`, in order: what no markdown rendering changes."""
    return "".join(ch for ch in text if ch.isalnum())


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


def tool_round_of(messages: list[dict[str, Any]]) -> tuple[set[str], bool]:
    """The tool names the assistant messages call, and whether any tool result follows."""
    called: set[str] = set()
    for message in messages:
        calls: object = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in cast(list[object], calls) if isinstance(calls, list) else []:
            function = (
                cast(dict[str, object], call).get("function") if isinstance(call, dict) else None
            )
            name = (
                cast(dict[str, object], function).get("name")
                if isinstance(function, dict)
                else None
            )
            if isinstance(name, str):
                called.add(name)
    return called, any(message.get("role") == "tool" for message in messages)


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
