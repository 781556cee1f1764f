"""The whole conformance kit against Foreign Chat, a correct app it was not written for.

Foreign Chat (tests/conformance_selftest/foreign) shares nothing with the reference page:
a contenteditable editor with a Send button that appears only once something is typed, a
welcome dialog and a model picker before the first turn, answers over a WebSocket inserted
as HTML, one URL per chat, class names only, a Copy button instead of a state attribute,
its own tool on every request, a title call to the model after every turn, and a log line
of its own format. Its profile (foreign/profile.toml) describes all of that with the
documented keys only, and the full pass is the proof that a profile can.

The mock and the app are served in-process on free ports; the kit runs in a subprocess as a
user runs it (`python -m pytest --pyargs conformance ...`), bounded by KIT_DEADLINE_S as a
hang guard, and its verdicts are read from its JUnit XML and its clause report. The mock's
journal is read afterwards: every turn (but the preflight's, which prove the page's parts)
made one title call, journalled as a side call, and the turn's own requests are exactly what
its flow expects, so the kit did not count it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.oracle.clauses import BY_ID, CLAUSES
from conformance.oracle.expected import Expected
from mock_llm import JournalRecord, MockClient, serve_mock

from ..support.deadlines import DEADLINE_S
from .foreign import PROFILE, TITLE_PROMPT, serve_foreign
from .kit_runs import CASES, KIT_DEADLINE_S, KitRun, run_kit

SETTLE_MS = 300
PREFLIGHT = "-preflight-"
"""In the KEY of each turn the preflight plays to prove a part of the page (its thinking
display, Stop, its error display): flows with no outcome to judge, left out here."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.timeout(KIT_DEADLINE_S + 4 * DEADLINE_S),
]


@dataclass(frozen=True)
class ForeignRun:
    run: KitRun
    journal: dict[str, list[JournalRecord]]  # KEY -> its entries, settled
    expected: dict[str, Expected]  # flow -> the outcome its expect block states


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> ForeignRun:
    out = tmp_path_factory.mktemp("foreign-kit")
    log = out / "foreign.log"
    with serve_mock() as mock_url, serve_foreign(mock_url, log) as app_url:
        run = run_kit(app_url, mock_url, PROFILE, out, "--app-log", str(log), "--cases", str(CASES))
        with MockClient(mock_url, timeout=DEADLINE_S) as mock:
            keys = sorted(
                {e.key for e in mock.requests().requests if e.key and PREFLIGHT not in e.key}
            )
            journal = {
                key: list(
                    mock.requests(
                        key, settle_ms=SETTLE_MS, timeout_ms=int(DEADLINE_S * 1000)
                    ).requests
                )
                for key in keys
            }
            expected = {
                f.name: Expected(f.expect, f.canary, f.family, f.elsewhere)
                for f in mock.flows()
                if f.expect is not None
            }
    return ForeignRun(run, journal, expected)


def test_the_kit_passes_foreign_chat_on_every_clause(kit: ForeignRun) -> None:
    assert kit.run.cases, f"the kit wrote no JUnit results; {kit.run.describe()}"
    not_passed = {
        case.name: case.outcome
        for case in kit.run.cases
        if case.outcome != "passed"
        and not (case.outcome == "skipped" and BY_ID[case.clause].by_model)
    }  # a family flow the app's model does not take is judged by the other clause: skipped
    assert not not_passed, f"{not_passed}; {kit.run.describe()}"
    assert kit.run.returncode == 0, kit.run.describe()
    # The profile declares every capability, so no clause may skip, and every one was run
    # (CASE too: the run is given a recorded leak).
    assert {clause.id: kit.run.report.get(clause.id) for clause in CLAUSES} == {
        clause.id: "passed" for clause in CLAUSES
    }, kit.run.describe()
    assert {case.clause for case in kit.run.cases} == {clause.id for clause in CLAUSES}


def test_every_title_call_was_a_side_call_the_kit_did_not_count(kit: ForeignRun) -> None:
    assert kit.journal, "the mock journalled nothing"
    checked = 0
    for key, entries in kit.journal.items():
        own = [e for e in entries if not e.side_call]
        side = [e for e in entries if e.side_call]
        assert own, f"KEY {key}: only side calls"
        # one title call per turn, after it, under the turn's KEY, outside its flow
        assert len(side) == 1, f"KEY {key}: {len(side)} side calls, want the one title call"
        [title] = side
        messages = title.body["messages"]
        assert messages[0] == {"role": "system", "content": TITLE_PROMPT}
        assert f"#{key}]]" in messages[-1]["content"], "the title call repeats the question"
        assert (title.flow, title.request_in_turn) == ("side-call", None)
        assert title.seq > max(e.seq for e in own)
        # the side call did not advance the turn: its own requests are numbered 1..n
        assert [e.request_in_turn for e in own] == list(range(1, len(own) + 1))
        assert all("tools" in e.body for e in [own[0], title]), "the app's tool on every ask"
        flow = own[0].flow
        if flow in kit.expected:  # the kit judged this turn by its flow's count
            want = kit.expected[flow].for_model(own[0].body.get("model"))
            assert len(own) == want.requests, f"KEY {key} ({flow})"
            assert len(entries) == len(own) + 1
            checked += 1
    assert checked == len(kit.journal) - 1, "every turn but the stopped one (slow) is judged"
