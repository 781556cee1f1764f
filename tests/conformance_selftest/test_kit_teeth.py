"""The kit's teeth: run the whole conformance kit against every self-test target.

Each target (targets/, one mode per module) breaks the clauses its module names and must
pass every other one. For each mode, the target is served in-process against a mock shared
by the module (the built-in flows only: the kit plays nothing else), and the kit runs in a
subprocess, exactly as a user runs it (`python -m pytest --pyargs conformance --app-url ...`),
with a JUnit file and the markdown report written to a temporary folder. Then:

- the clauses with a failing test are exactly BREAKS[mode] | ALSO_FAILS[mode];
- every failure says `conformance clause <ID> failed: <title>` and quotes its evidence (a
  message of the kit's own, not a bare `assert`; for NEVER, the marker or canary it saw);
- every other clause passes in the report, skipped only where the target's profile does not
  declare the capability it needs (the `good` control fails and skips nothing).

A static test checks that every clause has a target that fails it, and one more runs a
baseline (`--expected-failures`) end to end against a broken target.

The family clauses (G13, G15) are played with every family flow where the flow's verdict
itself is what is proved: against the `good` control (each passes), `raw-relay` (each G13
flow fails: the kit sees every family's leak shape on a page that shows it raw) and
`eager-profiles` (each family's G15 flow fails: the kit sees every family's markup eaten).
Every other target plays one flow of each (kit_runs.ONE_FLOW_PER_FAMILY_CLAUSE): its clause
verdicts are proved as exactly, a play each, and the other family plays (about half of a
run's turns) would prove again, target after target, what those three runs prove flow by
flow.

The kit runs in a subprocess, never in-process: it keeps session state (its run id, its
verdicts) and drives its own sync Playwright, which the pytest that runs this module must
not share. Each run is bounded by kit_runs.KIT_DEADLINE_S, a hang guard; results are read from
the files the run wrote, never from its timing. Needs chromium (the kit's default path), so
this module is not part of the unit and integration run; see docs/conformance.md.
"""

from __future__ import annotations

import html
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from conformance.oracle.clauses import (
    BY_ID,
    CLAUSES,
    FAMILY_FLOWS,
    LOOKALIKE_FLOWS,
    SPECIAL_FLOWS,
)
from conformance.profiles.loader import load_profile
from conformance.report.evidence import folder_name
from mock_llm import serve_mock

from ..support.deadlines import DEADLINE_S
from .kit_runs import KIT_DEADLINE_S, Case, KitRun, run_kit
from .targets import ALSO_FAILS, BREAKS, MODES, PROFILES, serve_target

ROOT = Path(__file__).resolve().parents[2]
TEST_TIMEOUT_S = KIT_DEADLINE_S + 2 * DEADLINE_S
"""pytest-timeout for a test with one kit run: past the run's own deadline, so that one
reports first, with the run's output."""
MARKERS = ("<|tool_call_start|>", "<|tool_call_end|>", "<|tool_calls|>", "<|tool_call|>")
VERDICT_OF = {"passed": "passed", "failed": "failed", "error": "failed", "skipped": "skipped",
              "xfailed": "expected failure"}  # fmt: skip
"""The kit's verdict property for each JUnit outcome."""
TRACED_MODE = "raw-relay"
"""The one mode whose kit run keeps Playwright traces (it fails the most clauses); the
others run with --conformance-trace off (kit_runs' docstring)."""
EVIDENCE_TEXTS = ("dom.txt", "journal.json", "log.txt")
CLAUSE_FAILED = re.compile(r"conformance clause (?P<clause>\w+) failed: (?P<title>.+)")


class KitMissed(AssertionError):
    """The kit passed a clause the target breaks (or failed one it keeps)."""


# --- the mock and the targets -----------------------------------------------------------------


@dataclass(frozen=True)
class Mock:
    url: str
    canaries: dict[str, str]  # flow -> the canary its markup carries


@pytest.fixture(scope="module")
def mock() -> Iterator[Mock]:
    with serve_mock() as url:
        flows = httpx.get(f"{url}/_mock/flows", timeout=DEADLINE_S).json()["flows"]
        yield Mock(url, {flow["name"]: flow["canary"] for flow in flows if flow.get("canary")})


FAILS_EVERY_FLOW = {
    "raw-relay": ("G13", frozenset(SPECIAL_FLOWS)),
    "eager-profiles": ("G15", frozenset(f for f in LOOKALIKE_FLOWS if f in FAMILY_FLOWS)),
}
"""Per mode, a family clause it fails on every flow of a set: for the LFM2 model name the
targets ask for, G13 judges the special-token flows (a raw relay shows each), G15 the family
flows that are text for it (eager profiles eat each; the prose echo is no family's)."""
EVERY_FAMILY_FLOW = ("good", *FAILS_EVERY_FLOW)
"""The modes whose kit runs play every family flow (see the module docstring)."""
LONG_MODES = (*EVERY_FAMILY_FLOW, "no-stop")
"""The modes whose kit runs take longest (marked `long`, started first): every family flow,
or (`no-stop`) every Stop played to the end of its stream."""


def kit_on(mode: str, mock: Mock, tmp_path: Path, *extra: str) -> KitRun:
    """Serve target `mode` and run the kit against it (tracing only for TRACED_MODE)."""
    log_file = tmp_path / f"{mode}.log"
    trace = "dom" if mode == TRACED_MODE else "off"
    with serve_target(mode, mock.url, log_file) as url:
        return run_kit(url, mock.url, PROFILES[mode], tmp_path / "kit",
                       "--app-log", str(log_file), *extra, trace=trace,
                       every_family_flow=mode in EVERY_FAMILY_FLOW)  # fmt: skip


# --- the evidence of a failure ----------------------------------------------------------------


def check_failure(case: Case, mock: Mock, run: KitRun) -> None:
    """A failure names its clause (header), quotes evidence (the kit's own message) and
    leaves its artifacts."""
    assert case.verdict == "failed", f"{case.name}: verdict property {case.verdict!r}"
    header = CLAUSE_FAILED.search(case.message)
    assert header is not None, f"{case.name}: no 'conformance clause ... failed':\n{case.message}"
    assert header["clause"] == case.clause, f"{case.name}: header names {header['clause']}"
    assert header["title"] == BY_ID[case.clause].title, f"{case.name}: {header['title']!r}"
    body = case.message[header.end() :]
    errors = [line[1:].strip() for line in body.splitlines() if line.startswith("E ")]
    assert errors, f"{case.name}: no error line after the header:\n{body}"
    assert errors[0], f"{case.name}: an empty error line after the header:\n{body}"
    assert not errors[0].startswith("assert "), (
        f"{case.name}: a bare assert, no evidence quoted: {errors[0]!r}"
    )
    shown = html_section(case, run)
    if case.clause == "NEVER":
        quoted = [m for m in (*MARKERS, mock.canaries.get(case.flow)) if m and repr(m) in body]
        assert quoted, f"{case.name}: NEVER failed without quoting a marker or the canary:\n{body}"
        assert quoted[0] in check_evidence(case, run)["dom.txt"], case.name
        assert f"<mark>{html.escape(quoted[0])}</mark>" in shown, f"{case.name}: {shown}"
        assert '<img alt="the page as soon as it showed' in shown, f"{case.name}: no screenshot"
    else:
        check_evidence(case, run)


def html_section(case: Case, run: KitRun) -> str:
    """The failure's section of the run's HTML report (it has one per failed test)."""
    page = (run.artifacts.parent / "report.html").read_text(encoding="utf-8")
    sections = [s for s in page.split("<section ")[1:] if f"::{html.escape(case.name)}</code>" in s]
    assert len(sections) == 1, f"{case.name}: {len(sections)} sections in report.html"
    return sections[0]


def check_evidence(case: Case, run: KitRun) -> dict[str, str]:
    """The failed test's folder holds the recorded DOM, its turns' journal entries, the log
    excerpt and, when the run traced, a Playwright trace; returns the text files by name."""
    folders = [d for d in run.artifacts.iterdir() if d.name.endswith(folder_name(case.name))]
    assert len(folders) == 1, f"{case.name}: evidence folders {folders}"
    folder = folders[0]
    texts = {name: (folder / name).read_text(encoding="utf-8") for name in EVIDENCE_TEXTS}
    assert texts["dom.txt"].strip(), f"{case.name}: nothing recorded in dom.txt"
    journal = json.loads(texts["journal.json"])
    assert journal, f"{case.name}: no turn in journal.json"
    assert all(journal.values()), f"{case.name}: a turn without entries in {journal}"
    if not run.traced:
        assert not (folder / "trace.zip").exists(), f"{case.name}: a trace with tracing off"
        return texts
    with zipfile.ZipFile(folder / "trace.zip") as trace:
        assert any(name.endswith(".trace") for name in trace.namelist()), trace.namelist()
    return texts


def expected_verdict(mode: str, clause: str) -> str:
    if clause in BREAKS[mode] or clause in ALSO_FAILS[mode]:
        return "failed"
    needs = BY_ID[clause].needs
    if needs is not None and not load_profile(PROFILES[mode]).has(needs):
        return "skipped"
    return "passed"


# --- the tests --------------------------------------------------------------------------------


def test_every_clause_has_a_target_that_fails_it() -> None:
    """The clause coverage: a clause no target fails is a check the kit could lose unseen.

    A clause counts when a mode declares it in BREAKS or in ALSO_FAILS: the teeth test holds
    both to the same account (G4, G6 and G8 are raw-relay's ALSO_FAILS only).
    """
    failed = {clause for mode in MODES for clause in (*BREAKS[mode], *ALSO_FAILS[mode])}
    # CASE runs only with --cases, which these runs are not given; its teeth are the proxy
    # proof's (test_proxy_target.py: straight from the mock, Relay Chat fails the case).
    assert [c.id for c in CLAUSES if c.id not in failed and not c.on_request] == []
    for mode in MODES:
        declared = (*BREAKS[mode], *ALSO_FAILS[mode])
        assert set(declared) <= set(BY_ID), f"{mode}: unknown clause in {declared}"
        assert not set(BREAKS[mode]) & set(ALSO_FAILS[mode]), mode
        for clause in declared:  # a mode cannot fail a clause its profile skips
            needs = BY_ID[clause].needs
            assert needs is None or load_profile(PROFILES[mode]).has(needs), (mode, clause)


@pytest.mark.slow
@pytest.mark.timeout(TEST_TIMEOUT_S)
@pytest.mark.parametrize(
    "mode", [pytest.param(m, marks=pytest.mark.long) if m in LONG_MODES else m for m in MODES]
)
def test_the_kit_fails_exactly_the_clauses_a_target_breaks(
    mode: str, mock: Mock, tmp_path: Path
) -> None:
    run = kit_on(mode, mock, tmp_path)
    want = set(BREAKS[mode]) | set(ALSO_FAILS[mode])

    assert run.cases, f"the JUnit file has no test:\n{run.describe()}"
    assert all(case.clause in BY_ID for case in run.cases), [c.name for c in run.cases]
    got = run.failing()
    if got != want:
        raise KitMissed(
            f"{mode}: the kit failed {sorted(got)}, the target breaks {sorted(want)}"
            f" (missed {sorted(want - got)}, wrongly failed {sorted(got - want)})"
            f"\n{run.describe()}"
        )
    assert run.returncode == (1 if want else 0), f"exit {run.returncode}:\n{run.describe()}"
    verdicts = {
        clause.id: expected_verdict(mode, clause.id) for clause in CLAUSES if not clause.on_request
    }
    for case in run.cases:
        assert case.verdict == VERDICT_OF[case.outcome], case  # JUnit carries the verdict
        if case.outcome in ("failed", "error"):
            check_failure(case, mock, run)
        elif case.outcome != "passed" and BY_ID[case.clause].by_model:
            assert case.outcome == "skipped", case  # a family flow another clause judges
        elif case.outcome != "passed":  # a skip only where the profile lacks the capability
            assert (case.outcome, verdicts[case.clause]) == ("skipped", "skipped"), case
    assert run.report == verdicts, run.describe()
    if mode in FAILS_EVERY_FLOW:
        clause, flows = FAILS_EVERY_FLOW[mode]
        failed = {case.flow for case in run.cases if case.clause == clause
                  and case.outcome == "failed"}  # fmt: skip
        assert failed == flows, f"{mode}, {clause}: failed {sorted(failed)}, not {sorted(flows)}"


BASELINE_MODE = "over-strip"
"""The target the baseline test runs against: it fails G7 alone (and passes G1)."""


@pytest.mark.slow
@pytest.mark.timeout(2 * TEST_TIMEOUT_S)
def test_a_baseline_of_the_failing_clauses_passes_and_a_stale_entry_fails(
    mock: Mock, tmp_path: Path
) -> None:
    """Only the baseline's clauses run (-k): the subject is the baseline, not the clauses."""
    assert set(BREAKS[BASELINE_MODE]) | set(ALSO_FAILS[BASELINE_MODE]) == {"G7"}
    exact, stale = tmp_path / "exact.txt", tmp_path / "stale.txt"
    exact.write_text("G7  # over-strip eats look-alikes\n", encoding="utf-8")
    stale.write_text("G7\nG1  # passes: stale\n", encoding="utf-8")

    known = kit_on(BASELINE_MODE, mock, tmp_path / "exact",
                   "--expected-failures", str(exact), "-k", "lookalike")  # fmt: skip
    assert known.returncode == 0, known.describe()
    assert [(c.clause, c.outcome) for c in known.cases] == [("G7", "xfailed")], known.cases
    assert known.report["G7"] == "expected failure"

    old = kit_on(BASELINE_MODE, mock, tmp_path / "stale",
                 "--expected-failures", str(stale), "-k", "lookalike or g1_")  # fmt: skip
    assert old.returncode == 1, old.describe()
    outcomes = {c.clause: c.outcome for c in old.cases}
    assert outcomes == {"G1": "failed", "G7": "xfailed"}, old.cases
    [g1] = [c for c in old.cases if c.clause == "G1"]
    assert "stale baseline: clause G1" in g1.message, g1.message
    assert (old.report["G1"], old.report["G7"]) == ("stale baseline", "expected failure")
