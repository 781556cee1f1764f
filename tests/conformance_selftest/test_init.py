"""`python -m conformance init` on pages it has never met: the profile it writes lets the kit
pass a correct app, and a page it cannot use gets one line that says why.

init runs as a user runs it (a subprocess with the kit's browser), against the reference app
and against Foreign Chat (a welcome dialog, a model picker, a contenteditable editor with a
late Send button, answers over a WebSocket, a Copy button for done, a title call after every
turn); the kit then runs with the written profile, the clauses that use each part init
found selected. Each run is bounded (a hang guard), and verdicts are read from the files
the runs wrote.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from conformance.profiles.loader import load_profile
from conformance.run.reference import reference_stack
from mock_llm import serve_mock

from ..support.deadlines import DEADLINE_S
from ..support.processes import child_env
from .foreign import serve_foreign
from .kit_runs import KIT_DEADLINE_S, ROOT, run_kit
from .strangers import toast_error
from .strangers.turn_serving import serve_stranger
from .targets.base import BaseTarget

INIT_DEADLINE_S = 300.0
"""The longest one init run may take, a hang guard (a healthy one takes 15-40 s)."""
PARTS = "g1_ or g3_ or g9_ or g11_ or never"
"""The clauses that read what init finds: the answer (G1), the error and the done rule of a
failed turn (G3), the thinking display (G9), the stop control (G11), the recording (NEVER)."""
PARTS_CLAUSES = {"G1", "G3", "G9", "G11", "NEVER"}

pytestmark = [pytest.mark.slow, pytest.mark.timeout(INIT_DEADLINE_S + KIT_DEADLINE_S + DEADLINE_S)]


def run_init(
    app_url: str, mock_url: str, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    home = out.parent / "home"
    home.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "conformance", "init", app_url, "--mock-url", mock_url,
               "--out", str(out), *extra]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, env=child_env(home), capture_output=True,
                          text=True, timeout=INIT_DEADLINE_S, check=False)  # fmt: skip


def passes_with_profile(app_url: str, mock_url: str, tmp_path: Path) -> None:
    profile = tmp_path / "init.toml"
    done = run_init(app_url, mock_url, profile)
    assert done.returncode == 0, done.stdout + done.stderr
    load_profile(profile)
    run = run_kit(app_url.rstrip("/"), mock_url, profile, tmp_path / "kit", "-k", PARTS)
    assert run.returncode == 0, run.describe()
    assert {case.clause for case in run.cases if case.outcome == "passed"} == PARTS_CLAUSES


@pytest.mark.long
def test_inits_profile_passes_the_reference_app(tmp_path: Path):
    with reference_stack(tmp_path / "data") as stack:
        passes_with_profile(stack.app_url, stack.mock_url, tmp_path)


@pytest.mark.long
def test_inits_profile_passes_foreign_chat_getting_past_its_dialog_and_picker(tmp_path: Path):
    with serve_mock() as mock_url, serve_foreign(mock_url, tmp_path / "foreign.log") as url:
        passes_with_profile(f"{url}/", mock_url, tmp_path)
    text = (tmp_path / "init.toml").read_text(encoding="utf-8")
    # The dialog shows until dismissed (localStorage): once per browser context, so that no
    # play waits for it.
    assert '[[setup_once]]  # a dialog in the way\nclick_if_visible = "button.fc-dismiss"' in text
    assert 'select = "select[name=\\"model\\"]"' in text
    assert 'side_calls = ["^Generate a concise title for this chat\\\\. "]' in text


def test_inits_profile_for_a_page_whose_failed_turn_is_only_a_toast_names_the_toast(
    tmp_path: Path,
):
    """Also pins a bug: init named the message by its state (`div[data-phase="finished"]`),
    which no streaming message matches, so it never saw the answer stream nor the Stop."""
    with (
        serve_mock() as mock_url,
        serve_stranger(toast_error.Hidden, mock_url, tmp_path / "page.log") as base,
    ):
        passes_with_profile(f"{base}/", mock_url, tmp_path)
    profile = load_profile(tmp_path / "init.toml")
    assert profile.selectors.error == '[data-testid="toast-text"]'
    assert "a failed turn showed no message of its own" in (tmp_path / "init.toml").read_text(
        encoding="utf-8"
    )


class NoTextBox(BaseTarget):
    MODE = "no-text-box"
    PAGE: ClassVar[str | None] = "<!doctype html><title>x</title><p>Nothing to type in.</p>"


class EnterIgnored(BaseTarget):
    MODE = "enter-ignored"
    PAGE: ClassVar[str | None] = (
        "<!doctype html><title>x</title><label>Ask <textarea></textarea></label>"
    )


def test_a_page_with_no_text_box_is_one_line_that_says_so(tmp_path: Path):
    with (
        serve_mock() as mock_url,
        serve_stranger(NoTextBox, mock_url, tmp_path / "page.log") as base,
    ):
        url = f"{base}/"
        done = run_init(url, mock_url, tmp_path / "init.toml", "--timeout", "2")
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"conformance init: no text box to type a question into showed on {url}: if the page"
        " needs a sign-in"
    ), done.stderr
    assert not (tmp_path / "init.toml").exists()


def test_a_question_the_page_never_sent_is_named_as_such(tmp_path: Path):
    with (
        serve_mock() as mock_url,
        serve_stranger(EnterIgnored, mock_url, tmp_path / "page.log") as base,
    ):
        url = f"{base}/"
        done = run_init(url, mock_url, tmp_path / "init.toml", "--timeout", "2")
    assert done.returncode == 1
    assert "conformance init: the question is still in the text box textarea: it was never" in (
        done.stderr
    ), done.stderr
