"""`uv run python scripts/openwebui_report.py`: the conformance kit against the real Open WebUI.

Runs the whole kit against Open WebUI 0.12.4 (from PyPI, in its own cached venv; the first
run installs it, several minutes) by each route of tests/thirdparty/openwebui_runs.py, one
after the other, and writes every route's clause table into one page,
docs/openwebui-report.md by default (`--out FILE`; `--route NAME` for one route, repeatable).
About a minute per route once Open WebUI is installed. Exits 1 when a route's verdicts are
not the ones tests/thirdparty/test_openwebui_kit.py demands (the same judgement), so the
page is never written from a broken run without saying so.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.thirdparty.openwebui_runs import (  # noqa: E402
    CLEAN_CLAUSES,
    LEAK_CLAUSES,
    NOT_OPEN_WEBUIS,
    ROUTE_TITLES,
    ROUTES,
    run_route,
)
from tests.thirdparty.venvs import OPEN_WEBUI_VERSION  # noqa: E402

COMMAND = "uv run python scripts/openwebui_report.py"


def expected_verdicts(route: str, verdicts: dict[str, str], returncode: int) -> str | None:
    """What is wrong with a route's verdicts (None: they are the ones the test demands)."""
    failed = {c for c, v in verdicts.items() if v == "failed"}
    passed = {c for c, v in verdicts.items() if v == "passed"}
    if route == "direct":
        if failed != LEAK_CLAUSES or passed != CLEAN_CLAUSES:
            return f"failed {sorted(failed)}, passed {sorted(passed)}"
        return None
    if returncode != 0:
        return f"the kit exited {returncode}"
    if route != "filter" and passed != set(verdicts) - NOT_OPEN_WEBUIS:
        return f"passed only {sorted(passed)}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The conformance kit against the real Open WebUI.")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "openwebui-report.md")
    parser.add_argument("--route", action="append", choices=ROUTES, help="one route (repeatable)")
    args = parser.parse_args(argv)
    routes: list[str] = args.route or list(ROUTES)
    sections: list[str] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sg-openwebui-") as scratch:
        for route in routes:
            print(f"openwebui_report: {route}: {ROUTE_TITLES[route]} ...", flush=True)
            started = time.monotonic()
            result = run_route(route, Path(scratch) / route)
            wall = time.monotonic() - started
            report = Path(scratch) / route / "report.md"
            table = report.read_text(encoding="utf-8") if report.exists() else "(no report)\n"
            problem = expected_verdicts(route, result.report, result.returncode)
            verdict = "as expected" if problem is None else f"NOT as expected: {problem}"
            print(f"openwebui_report: {route}: {verdict} ({wall:.0f} s)", flush=True)
            if problem is not None:
                problems.append(f"{route}: {problem}")
            body = table.split("\n", 1)[1].lstrip("\n") if table.startswith("# ") else table
            sections.append(
                f"## {ROUTE_TITLES[route]}\n\nRoute `{route}`, kit exit {result.returncode},"
                f" {wall:.0f} s, verdicts {verdict}.\n\n{body}"
            )
    page = (
        f"# The conformance kit against Open WebUI {OPEN_WEBUI_VERSION}\n\n"
        f"Written by `{COMMAND}` on {time.strftime('%Y-%m-%d')}: the whole kit"
        " (`--profile openwebui`, with the recorded LFM2 leaks of"
        " tests/fixtures/cases/lfm2-leak.yaml as cases) against the real Open WebUI from"
        " PyPI, served offline against the mock, by each route a person can wire it"
        " ([integrations.md](integrations.md)). Straight from the model server Open WebUI"
        " shows the markup; behind the guard proxy, by either of its connections, it"
        " passes; with the Filter Function it passes every clause a filter can honour.\n\n"
        + "\n".join(sections)
    )
    args.out.write_text(page, encoding="utf-8")
    print(f"openwebui_report: wrote {args.out}")
    for problem in problems:
        print(f"openwebui_report: FAIL {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
