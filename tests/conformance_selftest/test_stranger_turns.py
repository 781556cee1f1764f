"""The whole kit against two strangers of its turn finding (strangers/), as a user runs it.

- redraw-conversation redraws its whole conversation at every frame and drops a turn that
  ended in an error once the next question is sent: G3's follow-up after the error is the
  only message again, and the kit must find it (only G3 runs: `-k g3`).
- late-session ignores Enter until its session is open: with a profile that has no set-up
  step for it, the kit's first turn never leaves the composer, and the preflight says so
  in one line (a short --turn-timeout: nothing ever opens the session, so the wait only
  decides how soon the run says it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mock_llm import serve_mock

from ..support.deadlines import DEADLINE_S
from .kit_runs import KIT_DEADLINE_S, run_kit
from .strangers import late_session, redraw_conversation
from .strangers.turn_serving import serve_stranger

pytestmark = [pytest.mark.slow, pytest.mark.timeout(KIT_DEADLINE_S + 2 * DEADLINE_S)]
PREFLIGHT_FAILED = 3


def test_g3_passes_on_a_page_that_redraws_and_drops_the_error_turn(tmp_path: Path):
    with (
        serve_mock() as mock_url,
        serve_stranger(redraw_conversation.Target, mock_url, tmp_path / "app.log") as url,
    ):
        run = run_kit(url, mock_url, redraw_conversation.PROFILE, tmp_path / "kit", "-k", "g3")
    assert [(case.clause, case.outcome) for case in run.cases] == [("G3", "passed")], run.describe()
    assert run.returncode == 0, run.describe()


def test_a_first_question_the_page_never_took_stops_the_run_saying_so(tmp_path: Path):
    text = late_session.PROFILE.read_text(encoding="utf-8")
    profile = tmp_path / "no-setup.toml"
    profile.write_text(text[: text.index("[[setup]]")], encoding="utf-8")
    with (
        serve_mock() as mock_url,
        serve_stranger(late_session.Target, mock_url, tmp_path / "app.log") as url,
    ):
        run = run_kit(url, mock_url, profile, tmp_path / "kit", "--turn-timeout", "5")
    assert run.returncode == PREFLIGHT_FAILED, run.describe()
    assert (
        f"conformance preflight: a first turn on {url}/ could not start: the question is still"
        " in the composer (#editor): it was never sent (the kit pressed Enter in it and"
        " waited 5 s)."
    ) in run.output, run.describe()
