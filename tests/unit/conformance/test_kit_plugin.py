"""The kit's pytest hooks, in process (pytester): options, baselines, markers, the report.

Each test runs a small pytest session with the kit's plugin loaded as a user's run loads it
(its entry point), over test files of its own: plain tests marked with a clause, or the
kit's own clause tests against a fake target (FAKE_TARGET: a Target whose mock and page
are stand-ins, so no browser, app or socket takes part).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# The flow-file parser (and YAML) load lazily, on a run's first case file: imported here,
# before any inner run. pytester's in-process runs drop from sys.modules every module a run
# imported, but the package `mock_llm.flows` keeps its submodules as attributes: the next
# run's fresh flow_file got the last run's yaml_nodes, whose YAML node classes were not its
# own, and refused a valid case file ("'steps' must be a non-empty list", the second of two
# `--cases` tests in one process).
import mock_llm.flows.flow_file  # noqa: F401  # pyright: ignore[reportUnusedImport]
from conformance.browser.session import DEFAULT_CHROMIUM
from conformance.oracle.clauses import BY_ID

from ...support.deadlines import DEADLINE_S
from ...support.processes import plugins_off

pytestmark = pytest.mark.timeout(DEADLINE_S)

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "fixtures" / "cases" / "lfm2-leak.yaml"
QUIET = ("-p", "no:cacheprovider", "-p", "no:asyncio", "-p", "no:playwright", *plugins_off())
"""Every inner run: no cache folder, no pytest-asyncio (its unset-loop-scope warning), no
pytest-playwright (its soft-assertion scope, global, cannot nest in the outer run's) and none
of the dev environment's unused plugins (pytester restores sys.modules after each inner run,
so each would import them again)."""

MARKED = """
import pytest

@pytest.mark.clause("G1", flow="clean")
def test_clean():
    pass

@pytest.mark.clause("G4", flow="scaffold-mixed")
def test_mixed():
    assert False, "flow 'scaffold-mixed': the page showed the markup"

@pytest.mark.clause("G7", flow="lookalike")
def test_lookalike():
    assert False, "flow 'lookalike': the page swallowed prose"

@pytest.mark.clause("NEVER")
@pytest.mark.parametrize("flow", ["scaffold-recover", "scaffold-split"])
def test_never(flow):
    pass

@pytest.mark.clause("G9", flow="thinking-scaffold")
def test_thinking():
    pytest.skip("the profile does not declare the 'thinking' capability")

def test_not_a_kit_test():
    pass
"""
"""Plain tests marked as the kit marks its own: two pass, two fail, one skips, one is not a
kit test."""

PROBE = """
import json

import pytest

@pytest.mark.clause("G1", flow="clean")
def test_probe(conformance_kit, pytestconfig):
    kit = conformance_kit
    seen = {
        "app_url": kit.app_url, "mock_url": kit.mock_url, "trace": kit.trace,
        "chromium": kit.chromium, "artifacts": str(kit.artifacts),
        "turn_timeout_s": kit.turn_timeout_s, "stop_within_ms": kit.stop_within_ms,
        "profile": kit.profile.name, "report": str(kit.report) if kit.report else None,
    }
    (pytestconfig.rootpath / "kit.json").write_text(json.dumps(seen))
"""
"""One kit test that writes the settings the options resolved to (kit.json)."""

FAKE_TARGET = """
import pytest

from conformance.browser.chat import TurnView
from conformance.oracle.target import Target
from mock_llm.client import JournalRecord

LATE_MS = 1500.0
"Where the fake mock records the disconnect, after Stop was clicked at 0 ms."


def record(key):
    return JournalRecord(
        seq=1, path="/v1/chat/completions", key=key, flow="slow", step=1, steps=1,
        request_in_turn=1, stream=True, status=200, outcome="client_disconnected",
        error=None, fault=None, chunks_sent=3, received_ms=0.0, first_chunk_ms=0.0,
        ended_ms=LATE_MS, disconnected_ms=LATE_MS, body={"messages": []},
    )


class FakeUpstream:
    def requests(self, key, settle_ms=300):
        return [record(key)]

    def add_flows(self, text):
        pass

    everything = requests

    def begin(self, key):
        pass

    def now_ms(self):
        return 0.0


class FakeLocator:
    @property
    def first(self):
        return self

    def locator(self, selector):
        return self

    def filter(self, **kwargs):
        return self

    def wait_for(self, **kwargs):
        pass

    def element_handle(self):
        return None


class FakePage:
    def wait_for_function(self, expression, arg=None):
        pass


class FakeChat:
    page = FakePage()

    def open(self):
        pass

    def ask(self, question):
        if "preflight-error" in question:  # the preflight's turn whose model fails
            return TurnView("error", "", "The model service failed.", "", None)
        return TurnView("done", "Backups run nightly.", "", "", None)

    def send(self, question):
        return FakeLocator()

    def stop(self, trial=False):
        pass

    def recorded(self):
        return ""


class FakeSession:
    def chat(self):
        return FakeChat()

    def set_up_once(self):
        pass

    def begin_chunk(self, title):
        return False

    def discard_page(self):
        pass


@pytest.fixture(scope="session")
def conformance_target(conformance_kit):
    kit = conformance_kit
    return Target(
        app_url="http://app.invalid/", mock_url="http://mock.invalid", log_file=None,
        profile=kit.profile, upstream=FakeUpstream(), timeout_s=kit.turn_timeout_s,
        artifacts=kit.artifacts, stop_within_ms=kit.stop_within_ms,
    )


@pytest.fixture(scope="session")
def conformance_session(conformance_target):
    return FakeSession()
"""
"""A conftest that stands in for the target and the browser: the kit's fixtures above them
(the wiring check, the plays, the page) are the real ones."""

OPTIONAL = """
from conformance.test_contract import (
    test_g9_thinking_is_shown_raw,
    test_g10_the_log_line_counts_the_stripped_characters,
    test_g11_stop_closes_the_upstream_stream,
    test_g12_a_round_with_a_real_tool_call_gets_no_recovery,
    test_g14_a_real_tool_call_next_to_stripped_markup_is_still_run,
)
"""
"""The kit's optional clause tests, collected in the inner run."""

STOP = """
from conformance.test_contract import test_g11_stop_closes_the_upstream_stream
"""

BARE_PROFILE = 'name = "bare"\n'
"""A profile that declares no capability."""
STOP_PROFILE = 'name = "stop-only"\n[capabilities]\nstop = true\n'


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, *args)


def junit_properties(path: Path) -> dict[str, dict[str, str]]:
    """Each test's JUnit properties, by test name."""
    return {
        case.get("name", ""): {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        for case in ET.parse(path).getroot().iter("testcase")
    }


def report_rows(path: Path) -> dict[str, tuple[str, str]]:
    """Clause -> (verdict, tests) from the markdown report's table."""
    rows: dict[str, tuple[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) == 4 and cells[0] in BY_ID:
            rows[cells[0]] = (cells[2], cells[3])
    return rows


# --- options and their environment variables -----------------------------------------------


def probe(pytester: pytest.Pytester, *args: str) -> dict[str, object]:
    pytester.makepyfile(test_probe=PROBE)
    result = run(pytester, *args)
    result.assert_outcomes(passed=1)
    return json.loads((pytester.path / "kit.json").read_text())


def test_with_no_options_the_kit_takes_its_defaults(pytester: pytest.Pytester):
    assert probe(pytester) == {
        "app_url": None,
        "mock_url": None,
        "trace": "dom",
        "chromium": DEFAULT_CHROMIUM,
        "artifacts": "conformance-artifacts",
        "turn_timeout_s": 60.0,
        "stop_within_ms": 1000.0,
        "profile": "reference",
        "report": None,
    }


def test_every_option_can_come_from_its_environment_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytester.makefile(".toml", bare=BARE_PROFILE)
    for name, value in {
        "APP_URL": "http://127.0.0.1:3000/",
        "MOCK_URL": "http://127.0.0.1:8099",
        "TRACE": "off",
        "CHROMIUM": "/opt/chromium",
        "ARTIFACTS": "evidence",
        "TURN_TIMEOUT": "5",
        "STOP_WITHIN_MS": "2500",
        "PROFILE": "bare.toml",
        "REPORT": "report.md",
    }.items():
        monkeypatch.setenv(f"CONFORMANCE_{name}", value)
    assert probe(pytester) == {
        "app_url": "http://127.0.0.1:3000/",
        "mock_url": "http://127.0.0.1:8099",
        "trace": "off",
        "chromium": "/opt/chromium",
        "artifacts": "evidence",
        "turn_timeout_s": 5.0,
        "stop_within_ms": 2500.0,
        "profile": "bare",
        "report": "report.md",
    }


def test_a_flag_wins_over_its_environment_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CONFORMANCE_STOP_WITHIN_MS", "2500")
    monkeypatch.setenv("CONFORMANCE_TRACE", "off")
    seen = probe(pytester, "--stop-within-ms", "4000", "--conformance-trace", "screenshots")
    assert (seen["stop_within_ms"], seen["trace"]) == (4000.0, "screenshots")


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ("--app-url", "http://127.0.0.1:3000/"),
            {},
            "conformance: pass both --app-url and --mock-url, or neither",
        ),
        ((), {"CONFORMANCE_MOCK_URL": "http://127.0.0.1:8099"}, "pass both --app-url"),
        (
            ("--stop-within-ms", "0"),
            {},
            "conformance: --stop-within-ms must be more than 0",
        ),
        (
            (),
            {"CONFORMANCE_STOP_WITHIN_MS": "soon"},
            "conformance: CONFORMANCE_STOP_WITHIN_MS='soon' is not a number",
        ),
        (
            (),
            {"CONFORMANCE_TURN_TIMEOUT": "-1"},
            "conformance: CONFORMANCE_TURN_TIMEOUT='-1' must be more than 0",
        ),
        (
            (),
            {"CONFORMANCE_TRACE": "everything"},
            "conformance: CONFORMANCE_TRACE='everything'; use one of dom, screenshots, off",
        ),
        (
            ("--reference-model", "qwen3", "--app-url", "http://a/", "--mock-url", "http://m"),
            {},
            "conformance: --reference-model names the model of the reference app",
        ),
        (
            ("--app-url", "http://a/", "--mock-url", "http://m", "--app-log", "app.log"),
            {"CONFORMANCE_GUARD_LOG": "guard.log"},
            "conformance: pass --app-log (the app's own per-turn log) or --guard-log (the"
            " log of the guard proxy in front of it), not both: G10 judges one log",
        ),
        (
            ("--guard-log", "guard.log"),
            {},
            "conformance: --guard-log is the log of the guard proxy in front of your app"
            " (--app-url); the reference app the kit starts writes its own per-turn log",
        ),
    ],
    ids=[
        "app-url-alone",
        "mock-url-env-alone",
        "stop-bound-zero",
        "stop-bound-env-not-a-number",
        "turn-timeout-env-negative",
        "trace-env-unknown",
        "reference-model-with-app-url",
        "guard-log-with-app-log",
        "guard-log-without-app-url",
    ],
)
def test_a_bad_option_is_a_usage_error_that_names_it(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
    message: str,
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_probe=PROBE)
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_options_are_not_read_when_no_kit_test_is_collected(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """A bad kit setting in the environment never breaks a run of someone else's tests."""
    monkeypatch.setenv("CONFORMANCE_STOP_WITHIN_MS", "soon")
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    run(pytester).assert_outcomes(passed=1)


def test_the_options_are_listed_with_their_environment_variables(pytester: pytest.Pytester):
    help_text = " ".join(run(pytester, "--help").stdout.str().split())
    for flag, env in [
        ("--stop-within-ms", "CONFORMANCE_STOP_WITHIN_MS"),
        ("--turn-timeout", "CONFORMANCE_TURN_TIMEOUT"),
        ("--cases", "CONFORMANCE_CASES"),
        ("--conformance-trace", "CONFORMANCE_TRACE"),
        ("--app-url", "CONFORMANCE_APP_URL"),
    ]:
        assert flag in help_text
        assert f"env {env}" in help_text


# --- clause markers, user properties, failure headers -----------------------------------------


def test_kit_tests_carry_their_clause_flow_and_verdict_as_junit_properties(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_marked=MARKED)
    run(pytester, "--junitxml", "junit.xml")
    properties = junit_properties(pytester.path / "junit.xml")
    assert properties["test_clean"] == {
        "conformance_clause": "G1",
        "conformance_flow": "clean",
        "conformance_verdict": "passed",
    }
    assert properties["test_mixed"]["conformance_verdict"] == "failed"
    assert properties["test_never[scaffold-split]"] == {  # the flow from the parameter
        "conformance_clause": "NEVER",
        "conformance_flow": "scaffold-split",
        "conformance_verdict": "passed",
    }
    assert properties["test_thinking"]["conformance_verdict"] == "skipped"
    assert properties["test_not_a_kit_test"] == {}


def test_a_failure_opens_with_the_clause_it_breaks_then_the_evidence(pytester: pytest.Pytester):
    pytester.makepyfile(test_marked=MARKED)
    result = run(pytester)
    result.assert_outcomes(passed=4, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            f"conformance clause G4 failed: {BY_ID['G4'].title}",
            "*AssertionError: flow 'scaffold-mixed': the page showed the markup",
        ]
    )


# --- --expected-failures ----------------------------------------------------------------------


def test_a_baselined_failure_is_expected_and_a_baselined_pass_is_a_stale_baseline(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_marked=MARKED)
    pytester.makefile(".txt", known="G4  # no clean remainder yet\nG1:clean\n")
    result = run(pytester, "--expected-failures", "known.txt", "-rxX")
    result.assert_outcomes(passed=3, failed=2, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines_random(
        [
            "*XFAIL*test_mixed - baselined in --expected-failures (G4:scaffold-mixed)",
            f"*stale baseline: clause G1 ({BY_ID['G1'].title}) passes now on this flow;"
            " take it out of the --expected-failures file*",
        ]
    )


def test_a_baseline_entry_that_matches_no_test_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(test_marked=MARKED)
    pytester.makefile(".txt", known="NEVER:scaffold-mixed\n")
    result = run(pytester, "--expected-failures", "known.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "conformance: the baseline entry NEVER:scaffold-mixed matches no test (the flows NEVER"
        " is tested with: scaffold-recover, scaffold-split)"
    ) in result.stderr.str()


def test_the_baseline_is_matched_before_k_deselects(pytester: pytest.Pytester):
    """An entry for a test that -k leaves out still matches it (and it stays out)."""
    pytester.makepyfile(test_marked=MARKED)
    pytester.makefile(".txt", known="G1:clean\n")
    result = run(pytester, "--expected-failures", "known.txt", "-k", "never")
    result.assert_outcomes(passed=2)


# --- --cases: one CASE test per flow that states an outcome -----------------------------------

CASE_TEST = """
import pytest

@pytest.mark.clause("CASE")
def test_case(flow):
    pass
"""


def test_without_cases_the_case_test_is_deselected(pytester: pytest.Pytester):
    pytester.makepyfile(test_case=CASE_TEST)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["*1 deselected*"])


@pytest.mark.parametrize("given", ["flag", "env"])
def test_each_case_flow_is_one_test_named_after_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, given: str
):
    pytester.makepyfile(test_case=CASE_TEST)
    if given == "env":
        monkeypatch.setenv("CONFORMANCE_CASES", f":{CASES}:")  # empty entries are skipped
        result = run(pytester, "-v")
    else:
        result = run(pytester, f"--cases={CASES}", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*test_case[[]lfm2-backup-leak[]] PASSED*", "*test_case[[]lfm2-leak-twice[]] PASSED*"]
    )


def test_an_unreadable_case_file_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(test_case=CASE_TEST)
    result = run(pytester, "--cases", "gone.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "conformance: cannot read the case file gone.yaml" in result.stderr.str()


# --- the report -------------------------------------------------------------------------------


def test_the_report_has_one_row_per_clause_with_its_verdict(pytester: pytest.Pytester):
    pytester.makepyfile(test_marked=MARKED)
    pytester.makefile(".txt", known="G7\n")
    run(pytester, "--conformance-report", "out/report.md", "--expected-failures", "known.txt")
    report = pytester.path / "out" / "report.md"
    text = report.read_text(encoding="utf-8")
    assert text.startswith("# Guardrail conformance report\n")
    assert "Target: the reference app (started by the kit)" in text
    rows = report_rows(report)
    assert rows["G1"] == ("passed", "1 passed")
    assert rows["G4"] == ("failed", "1 failed")
    assert rows["G7"] == ("expected failure", "1 expected failure")
    assert rows["NEVER"] == ("passed", "2 passed")
    assert rows["G9"] == ("skipped", "1 skipped")
    assert rows["G2"] == ("not run", "none")
    assert "CASE" not in rows  # asked for only with --cases


def test_the_html_report_lists_each_failure_with_the_kits_message(pytester: pytest.Pytester):
    pytester.makepyfile(test_marked=MARKED)
    pytester.makefile(".txt", known="G7\n")
    run(pytester, "--conformance-report", "out/report.md", "--expected-failures", "known.txt")
    page = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<h2>Failures (1)</h2>" in page
    assert "test_marked.py::test_mixed" in page
    assert "conformance clause G4 failed" in page
    assert "flow &#x27;scaffold-mixed&#x27;: the page showed the markup" in page
    assert "test_lookalike" not in page  # an expected failure is no failure


def test_the_report_names_the_target_and_the_profile(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytester.makepyfile(test_marked=MARKED)
    pytester.makefile(".toml", bare=BARE_PROFILE)
    monkeypatch.setenv("CONFORMANCE_REPORT", "report.md")
    run(pytester, "--app-url", "http://127.0.0.1:3000/", "--mock-url", "http://127.0.0.1:8099",
        "--profile", "bare.toml")  # fmt: skip
    text = (pytester.path / "report.md").read_text(encoding="utf-8")
    assert "Target: http://127.0.0.1:3000/\n" in text
    assert "Profile: bare (bare.toml)\n" in text


def test_no_report_is_written_when_no_kit_test_is_collected(pytester: pytest.Pytester):
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    run(pytester, "--conformance-report", "report.md").assert_outcomes(passed=1)
    assert not (pytester.path / "report.md").exists()


@pytest.mark.timeout(2 * DEADLINE_S)  # past the run's own deadline, which reports first
def test_under_xdist_the_controller_writes_the_report(pytester: pytest.Pytester):
    """The controller collects nothing itself; the workers' verdicts still make the report.
    (A child process: xdist starts its workers as processes anyway.)"""
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_subprocess(
        *QUIET, "-n", "1", "--conformance-report", "report.md", timeout=DEADLINE_S
    )
    result.assert_outcomes(passed=4, failed=2, skipped=1)
    rows = report_rows(pytester.path / "report.md")
    assert rows["G4"] == ("failed", "1 failed")
    assert rows["NEVER"] == ("passed", "2 passed")


def test_each_run_reports_only_its_own_verdicts(pytester: pytest.Pytester):
    """The verdicts live in the run's config, not in the module: a second run in the same
    process starts from none."""
    pytester.makepyfile(test_marked=MARKED)
    run(pytester, "--conformance-report", "first.md")
    run(pytester, "--conformance-report", "second.md", "-k", "clean")
    assert report_rows(pytester.path / "first.md")["G4"] == ("failed", "1 failed")
    second = report_rows(pytester.path / "second.md")
    assert second["G1"] == ("passed", "1 passed")
    assert second["G4"] == ("not run", "none")


# --- the header -------------------------------------------------------------------------------


def test_the_run_names_its_target_and_profile_once_collected(pytester: pytest.Pytester):
    pytester.makepyfile(test_marked=MARKED)
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines(
        [
            "collected 7 items",
            "conformance: target the reference app (started by the kit), profile reference"
            " (built-in (the reference app's page))",
        ]
    )


def test_a_run_without_kit_tests_has_no_kit_header(pytester: pytest.Pytester):
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("conformance: target*")


# --- the kit's own clause tests against a fake target -----------------------------------------


def test_optional_clauses_skip_with_the_capability_the_profile_does_not_declare(
    pytester: pytest.Pytester,
):
    pytester.makeconftest(FAKE_TARGET)
    pytester.makepyfile(test_optional=OPTIONAL)
    pytester.makefile(".toml", bare=BARE_PROFILE)
    result = run(pytester, "--profile", "bare.toml", "-rs", "--conformance-report", "report.md")
    result.assert_outcomes(skipped=8)
    result.stdout.fnmatch_lines_random(
        [
            f"SKIPPED [[]{count}[]] *: the profile does not declare the '{capability}' capability*"
            for count, capability in [(1, "thinking"), (4, "log"), (1, "stop"), (2, "tools")]
        ]
    )
    rows = report_rows(pytester.path / "report.md")
    assert [rows[c][0] for c in ("G9", "G10", "G11", "G12", "G14")] == ["skipped"] * 5


@pytest.mark.parametrize(
    ("args", "env", "allowed"),
    [((), {}, None), ((), {"CONFORMANCE_STOP_WITHIN_MS": "1200"}, "1200")],
    ids=["default", "env"],
)
def test_g11_fails_a_disconnect_later_than_the_stop_bound(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
    allowed: str | None,
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeconftest(FAKE_TARGET)
    pytester.makepyfile(test_stop=STOP)
    pytester.makefile(".toml", stop=STOP_PROFILE)
    result = run(pytester, "--profile", "stop.toml", *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"conformance clause G11 failed: {BY_ID['G11'].title}",
            "*G11: the mock saw the disconnect 1500 ms after Stop was clicked"
            f" (the contract allows {allowed or 1000} ms)",
        ]
    )
    evidence = pytester.path / "conformance-artifacts"
    assert [p.name for p in evidence.iterdir()] == [
        "test_stop.py_test_g11_stop_closes_the_upstream_stream"
    ]


def test_g11_passes_a_disconnect_within_a_bound_given_slack(pytester: pytest.Pytester):
    pytester.makeconftest(FAKE_TARGET)
    pytester.makepyfile(test_stop=STOP)
    pytester.makefile(".toml", stop=STOP_PROFILE)
    run(pytester, "--profile", "stop.toml", "--stop-within-ms", "5000").assert_outcomes(passed=1)
