"""The conformance kit's command line, as a user meets it: bad options and unreachable targets.

Each test runs `python -m pytest --pyargs conformance ...` in a child process outside the
checkout, as a user of the installed kit would, and reads its exit status and output. None
of these runs gets as far as a browser: each stops in option parsing or in the preflight,
with one line that says what is wrong (exit status 4 for a usage error, 3 for a preflight
failure).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ...support.deadlines import DEADLINE_S
from ...support.ports import refusing_port
from ...support.processes import child_env, plugins_off

RUN_DEADLINE_S = 10 * DEADLINE_S  # a hang guard for a whole child pytest, not a timing claim
USAGE_ERROR = 4
PREFLIGHT_FAILED = 3


def run_kit(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance", "-p", "no:cacheprovider",
         *plugins_off("xdist"), *args],
        cwd=tmp_path,
        env=child_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_S,
        check=False,
    )  # fmt: skip


def assert_usage_error(done: subprocess.CompletedProcess[str], message: str) -> None:
    """The run stopped on a usage error (exit status 4) whose one line on stderr says `message`."""
    assert done.returncode == USAGE_ERROR
    assert message in done.stderr


@pytest.fixture
def dead_url() -> Iterator[str]:
    with refusing_port() as port:
        yield f"http://127.0.0.1:{port}"


def test_an_app_url_without_a_mock_url_is_a_usage_error(tmp_path: Path):
    done = run_kit(tmp_path, "--app-url", "http://127.0.0.1:1/")
    assert_usage_error(done, "pass both --app-url and --mock-url, or neither")


def test_the_target_options_can_come_from_the_environment(tmp_path: Path):
    done = run_kit(tmp_path, CONFORMANCE_MOCK_URL="http://127.0.0.1:1")
    assert_usage_error(done, "pass both --app-url and --mock-url, or neither")


def test_a_bad_profile_is_a_usage_error_naming_the_file_and_the_key(tmp_path: Path):
    (tmp_path / "p.toml").write_text("[selectors]\nbutton = 'x'\n", encoding="utf-8")
    done = run_kit(tmp_path, "--profile", "p.toml")
    assert_usage_error(done, "p.toml: unknown key selectors.button")


def test_a_bad_baseline_is_a_usage_error_naming_the_line(tmp_path: Path):
    (tmp_path / "known.txt").write_text("G1\nG99\n", encoding="utf-8")
    done = run_kit(tmp_path, "--expected-failures", "known.txt")
    assert_usage_error(done, "known.txt:2: 'G99' is not CLAUSE or CLAUSE:FLOW")


def test_a_baseline_flow_that_no_test_plays_is_a_usage_error(tmp_path: Path):
    (tmp_path / "known.txt").write_text("G2:scaffold-recovr\n", encoding="utf-8")
    done = run_kit(tmp_path, "--expected-failures", "known.txt")
    assert_usage_error(done, "G2:scaffold-recovr matches no test")
    assert "(the flows G2 is tested with: scaffold-recover)" in done.stderr


def test_an_unreachable_page_stops_the_run_in_the_preflight(
    tmp_path: Path, mock_url: str, dead_url: str
):
    page = dead_url
    done = run_kit(tmp_path, "--app-url", f"{page}/", "--mock-url", mock_url)
    assert done.returncode == PREFLIGHT_FAILED
    assert f"conformance preflight: the app's page at {page}/ cannot be reached" in done.stdout


def test_a_mock_url_that_is_not_mock_llm_stops_the_run_in_the_preflight(tmp_path: Path, notes_app):
    done = run_kit(tmp_path, "--app-url", f"{notes_app.url}/", "--mock-url", notes_app.url)
    assert done.returncode == PREFLIGHT_FAILED
    assert f"conformance preflight: {notes_app.url} is not a mock_llm this kit reads" in (
        done.stdout
    )


def test_an_unreachable_mock_stops_the_run_in_the_preflight(
    tmp_path: Path, notes_app, dead_url: str
):
    mock = dead_url
    done = run_kit(tmp_path, "--app-url", f"{notes_app.url}/", "--mock-url", mock)
    assert done.returncode == PREFLIGHT_FAILED
    assert f"conformance preflight: the mock at {mock} does not answer" in done.stdout


def test_a_declared_log_without_app_log_stops_the_run_in_the_preflight(
    tmp_path: Path, notes_app, mock_url: str
):
    done = run_kit(tmp_path, "--app-url", f"{notes_app.url}/", "--mock-url", mock_url)
    assert done.returncode == PREFLIGHT_FAILED
    assert "the profile declares a log, but no --app-log was given" in done.stdout


@pytest.mark.parametrize("rule", ["(unclosed", "x" * 501])
def test_a_side_call_rule_the_mock_refuses_stops_the_run_in_the_preflight(
    tmp_path: Path, notes_app, mock_url: str, rule: str
):
    (tmp_path / "p.toml").write_text(f"[model_calls]\nside_calls = [{rule!r}]\n", encoding="utf-8")
    done = run_kit(
        tmp_path, "--app-url", f"{notes_app.url}/", "--mock-url", mock_url, "--profile", "p.toml"
    )
    assert done.returncode == PREFLIGHT_FAILED
    assert "the mock refused the profile's model_calls.side_calls" in done.stdout


def test_a_missing_browser_stops_the_run_in_the_preflight(tmp_path: Path, notes_app, mock_url: str):
    done = run_kit(
        tmp_path,
        "--app-url", f"{notes_app.url}/", "--mock-url", mock_url,
        "--app-log", str(notes_app.settings.log_file),
        "--chromium-path", str(tmp_path / "no-chromium"),
    )  # fmt: skip
    assert done.returncode == PREFLIGHT_FAILED
    assert f"conformance preflight: no browser at {tmp_path / 'no-chromium'}" in done.stdout


def test_a_case_file_that_states_no_outcome_is_a_usage_error(tmp_path: Path):
    (tmp_path / "plain.yaml").write_text(
        "flows:\n  mine:\n    steps:\n      - content: hi\n", encoding="utf-8"
    )
    done = run_kit(tmp_path, "--cases", "plain.yaml")
    assert_usage_error(done, "no flow in the case file plain.yaml states an expected outcome")


def test_a_missing_case_file_from_the_environment_is_a_usage_error(tmp_path: Path):
    done = run_kit(tmp_path, CONFORMANCE_CASES="gone.yaml")
    assert_usage_error(done, "cannot read the case file gone.yaml")


def test_a_case_the_mock_has_under_another_definition_stops_the_run_in_the_preflight(
    tmp_path: Path, notes_app, mock_url: str
):
    (tmp_path / "cases.yaml").write_text(
        "flows:\n  clean:\n    steps:\n      - content: not the built-in clean flow\n"
        "    expect: {shown: x, recovery: false, stripped_chars: 0, error: null, requests: 1}\n",
        encoding="utf-8",
    )
    done = run_kit(
        tmp_path, "--app-url", f"{notes_app.url}/", "--mock-url", mock_url,
        "--app-log", str(notes_app.settings.log_file), "--cases", "cases.yaml",
    )  # fmt: skip
    assert done.returncode == PREFLIGHT_FAILED
    assert "the mock refused the flows of the case file cases.yaml" in done.stdout
    assert "already exists with a different definition" in done.stdout
