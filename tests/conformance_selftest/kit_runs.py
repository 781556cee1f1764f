"""The whole conformance kit run against an app, as a user runs it, and its results read.

`run_kit` starts `python -m pytest --pyargs conformance` in a subprocess (its own process
group, so its browser goes with it) against an app and a mock that are already served,
bounded by KIT_DEADLINE_S as a hang guard, and reads each test's outcome, clause and
message from its JUnit XML and each clause's verdict from its markdown report. Results are
read from the files the run wrote, never from its timing.

A run given no `-k` of its own plays one flow for each family clause (ONE_FLOW_PER_FAMILY_CLAUSE)
unless it asks for every family flow: a family flow is about half of a run's plays, and one
play judges each family clause as exactly as all of them do, against a page that does not
tell one family's markup from another's. The runs that prove the kit's verdict on each
family flow ask for all of them: the `good` control (every flow passes), `raw-relay` (the kit
sees every family's leak shape on a page that shows it) and `eager-profiles` (the kit sees
every family's markup eaten) in test_kit_teeth.py, and validate.sh's two kit runs against the
reference app.

A run keeps no Playwright traces unless it asks (`trace`): tracing takes a DOM snapshot
before and after every call the kit makes to the page, a third of a whole run's CPU time
(the reference app's run: 28 CPU-s traced, 19 untraced, counted by process), and no verdict
depends on it. The traces are proved where they are the point: test_kit_teeth's TRACED_MODE
run checks that each failure's evidence holds one, and validate.sh's README run keeps the
kit's default (traces of failures, with DOM snapshots).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.oracle.clauses import BY_ID, LOOKALIKE_FLOWS, SPECIAL_FLOWS
from mock_llm.flows.catalog import builtin_flows

from ..support.processes import child_env, plugins_off

ROOT = Path(__file__).resolve().parents[2]
KIT_DEADLINE_S = 600.0
"""The longest a whole kit run may take, a hang guard (a healthy run takes 15 s to two
minutes), never a claim about how fast it is."""
CASES = ROOT / "tests" / "fixtures" / "cases" / "lfm2-leak.yaml"
"""Two LFM2 leaks with their expected outcomes (one recovered, one ending in the malformed-reply
error), for the kit's CASE clause (`--cases`)."""
KEPT_ENV = ("CONFORMANCE_CHROMIUM", "CONFORMANCE_TURN_TIMEOUT")
"""The kit's environment variables a run inherits; the others would override its target."""
STOP_SLACK = ("--stop-within-ms", "5000")
"""G11's bound in every self-test kit run, as in validate.sh: load-proof slack over the
default 1000 ms, so no verdict depends on machine load. The target that breaks G11
(`no-stop`) still fails it: its stream is read to the end, so the mock records it
`completed`, not a disconnect, whatever the bound."""


def _scaffold_only_special_flow() -> str:
    expects = {name: flow.expect for name, flow in builtin_flows().items()}
    return next(name for name in SPECIAL_FLOWS if (want := expects[name]) and want.recovery)


ONE_FLOW_PER_FAMILY_CLAUSE = (
    "not (g13_ or g15_)"
    " or test_g13_a_familys_leak_shape_is_stripped_for_a_model_of_that_family"
    f"[{_scaffold_only_special_flow()}]"
    f" or test_g15_another_familys_markup_is_shown_whole[{LOOKALIKE_FLOWS[0]}]"
)
"""The kit's tests with one flow for each family clause (a `-k` expression): for G13, the
first special-token flow (stripped for every model: G13 plays it for any app) whose answer is
markup alone, so a target that mishandles the recovery fails it as one that shows markup
does; for G15, the first look-alike (text for an LFM2 model name: G15 plays it)."""


@dataclass(frozen=True)
class Case:
    """One conformance test as the run's JUnit file has it."""

    name: str
    clause: str
    flow: str
    outcome: str  # passed | failed | error | skipped | xfailed
    message: str  # the failure's whole text ('' unless failed or error)
    verdict: str  # the kit's own verdict property (passed, failed, skipped, ...)


@dataclass(frozen=True)
class KitRun:
    returncode: int
    output: str
    wall_s: float
    cases: list[Case]
    report: dict[str, str]  # clause id -> its verdict in the markdown report
    artifacts: Path  # where the run's failing tests left their evidence
    traced: bool  # whether the run kept Playwright traces of its failures

    def failing(self) -> set[str]:
        return {case.clause for case in self.cases if case.outcome in ("failed", "error")}

    def with_verdict(self, verdict: str) -> set[str]:
        """The clauses the report gives `verdict`."""
        return {clause for clause, v in self.report.items() if v == verdict}

    def describe(self) -> str:
        """The exit, each failing test's message (the assertion first) and the
        run's summary (the tail of its output when it has none), for an assertion message
        that says why a run failed, not only which tests did."""
        lines = self.output.splitlines()
        summary = [i for i, line in enumerate(lines) if "short test summary info" in line]
        tail = lines[summary[-1] :] if summary else lines[-80:]
        failures = [
            f"--- {case.name} ({case.clause}):\n" + "\n".join(case.message.splitlines()[:20])
            for case in self.cases
            if case.outcome in ("failed", "error")
        ]
        return "\n".join(
            [f"kit exit {self.returncode} after {self.wall_s:.0f} s:", *failures, *tail]
        )


def kit_command(*args: str) -> list[str]:
    """The kit's command line, with G11's load-proof slack (STOP_SLACK)."""
    command = [sys.executable, "-m", "pytest", "--pyargs", "conformance", "-q", *STOP_SLACK]
    command += ["-p", "no:cacheprovider", "-p", "no:randomly"]
    command += plugins_off("xdist")
    return [*command, *args]


def run_kit(app_url: str | None, mock_url: str | None, profile: Path | None, out: Path,
            *extra: str, trace: str = "off", every_family_flow: bool = False,
            ) -> KitRun:  # fmt: skip
    """The kit against an app and its mock, or (all three None) against the reference app
    it starts itself; what it wrote to `out`, read back. Without a `-k` in `extra`, one
    flow per family clause unless `every_family_flow` (see the module docstring). Without
    Playwright traces unless `trace` says so (see the module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    junit, report = out / "junit.xml", out / "report.md"
    target: list[str] = []
    if app_url is not None and mock_url is not None:
        target = ["--app-url", f"{app_url}/", "--mock-url", mock_url]
    if profile is not None:
        target += ["--profile", str(profile)]
    if not every_family_flow and "-k" not in extra:
        target += ["-k", ONE_FLOW_PER_FAMILY_CLAUSE]
    command = kit_command(
        *target, "--junitxml", str(junit), "--conformance-report", str(report),
        "--conformance-artifacts", str(out / "artifacts"), "--conformance-trace", trace,
        *extra,
    )  # fmt: skip
    home = out / "home"
    home.mkdir(exist_ok=True)
    started = time.monotonic()
    with (out / "output.txt").open("w+", encoding="utf-8") as output:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=child_env(home, **{k: v for k, v in os.environ.items() if k in KEPT_ENV}),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the browser goes with it
        )
        try:
            returncode = process.wait(timeout=KIT_DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            output.seek(0)
            pytest.fail(f"the kit run did not end within {KIT_DEADLINE_S:g} s:\n{output.read()}")
        output.seek(0)
        text = output.read()
    assert junit.is_file(), f"the kit run (exit {returncode}) wrote no JUnit file:\n{text}"
    return KitRun(returncode, text, time.monotonic() - started, read_junit(junit),
                  read_report(report), out / "artifacts", traced=trace != "off")  # fmt: skip


def read_junit(path: Path) -> list[Case]:
    cases: list[Case] = []
    for testcase in ET.parse(path).getroot().iter("testcase"):
        properties = {p.get("name"): p.get("value") or "" for p in testcase.iter("property")}
        outcome, message = "passed", ""
        for child in testcase:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                message = f"{child.get('message', '')}\n{child.text or ''}"
                break
            if child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        cases.append(
            Case(
                name=testcase.get("name", ""),
                clause=properties.get("conformance_clause", ""),
                flow=properties.get("conformance_flow", ""),
                outcome=outcome,
                message=message,
                verdict=properties.get("conformance_verdict", ""),
            )
        )
    return cases


def read_report(path: Path) -> dict[str, str]:
    """The verdict column of the markdown report, by clause id ({} if none was written)."""
    if not path.is_file():
        return {}
    rows: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) == 4 and cells[0] in BY_ID:
            rows[cells[0]] = cells[2]
    return rows
