"""The whole conformance kit run against an app, as a user runs it, and its verdicts read.

`run_kit` starts `python -m pytest --pyargs conformance` in a subprocess against an app and
a mock that are already served, bounded by KIT_DEADLINE_S as a hang guard, and reads each
test's outcome and clause from its JUnit XML and each clause's verdict from its report.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KIT_DEADLINE_S = 600.0
"""The longest a whole kit run may take, a hang guard (a healthy run takes 15 s to two
minutes)."""
CASES = ROOT / "tests" / "fixtures" / "cases" / "lfm2-leak.yaml"
"""Two LFM2 leaks with their expected outcomes (one recovered, one ending in the malformed-reply
error), for the kit's CASE clause (`--cases`)."""
KEPT_ENV = ("CONFORMANCE_CHROMIUM", "CONFORMANCE_TURN_TIMEOUT")
"""The kit's environment variables passed on; the others would override this run's target."""
STOP_SLACK = ("--stop-within-ms", "5000")
"""G11's bound in every self-test kit run, as in validate.sh: load-proof slack over the
default 1000 ms, so no verdict depends on machine load. The target that breaks G11
(`no-stop`) still fails it: its stream is read to the end, so the mock records it
`completed`, not a disconnect, whatever the bound."""


@dataclass(frozen=True)
class KitResult:
    returncode: int
    output: str
    wall_s: float
    cases: dict[str, str]  # test name -> passed | failed | error | skipped
    clauses: dict[str, str]  # test name -> its clause
    verdicts: dict[str, str]  # clause -> the report's verdict

    def explain(self) -> str:
        return f"kit exit {self.returncode} after {self.wall_s:.0f} s:\n{self.output[-6000:]}"


def run_kit(
    app_url: str | None, mock_url: str | None, profile: Path | None, out: Path, *extra: str
) -> KitResult:
    """The kit against an app and its mock, or (all three None) against the reference app
    it starts itself."""
    junit, report = out / "junit.xml", out / "report.md"
    target: list[str] = []
    if app_url is not None and mock_url is not None:
        target = ["--app-url", f"{app_url}/", "--mock-url", mock_url]
    if profile is not None:
        target += ["--profile", str(profile)]
    command = [
        sys.executable, "-m", "pytest", "--pyargs", "conformance", *target,
        "--conformance-report", str(report),
        "--junitxml", str(junit), "--conformance-artifacts", str(out / "artifacts"),
        *STOP_SLACK, "-p", "no:cacheprovider", "-n", "0", "-q", *extra,
    ]  # fmt: skip
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CONFORMANCE_") or name in KEPT_ENV
    }
    started = time.monotonic()
    try:
        done = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=KIT_DEADLINE_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode(errors="replace")  # bytes, even with text=True
        pytest.fail(f"the kit run did not end within {KIT_DEADLINE_S:g} s:\n{output[-6000:]}")
    cases, clauses = read_junit(junit) if junit.exists() else ({}, {})
    verdicts = read_report(report) if report.exists() else {}
    return KitResult(
        done.returncode,
        done.stdout + done.stderr,
        time.monotonic() - started,
        cases,
        clauses,
        verdicts,
    )


def read_junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Each test's outcome, and its clause (from the kit's JUnit properties)."""
    cases: dict[str, str] = {}
    clauses: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = "failed" if tag == "failure" else tag
        cases[name] = outcome
        for prop in case.iter("property"):
            if prop.get("name") == "conformance_clause":
                clauses[name] = prop.get("value", "")
    return cases, clauses


def read_report(path: Path) -> dict[str, str]:
    """Clause -> verdict, from the report's table (`| id | title | verdict | tests |`)."""
    verdicts: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 4 and cells[0] != "clause" and not set(cells[0]) <= set("-: "):
            verdicts[cells[0]] = cells[2]  # a clause's row, not the header or its rule
    return verdicts
