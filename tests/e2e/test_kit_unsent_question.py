"""A question the page never took (conformance.browser.chat.ChatPage), on a page that is not ready
at once.

The late-session stranger (tests/conformance_selftest/strangers/late_session.py) lets a
person type at once but swallows Enter until it has a session, which it opens when "Start
chatting" is clicked. Without the set-up steps that open it and wait for it, the kit's
question stays in the composer, and the kit says so instead of "the turn did not finish";
with them, the turn is played.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from conformance.browser.chat import ChatPage
from conformance.browser.composer import QuestionNotSent
from conformance.profiles.loader import load_profile
from conformance.run.questions import question
from mock_llm import serve_mock

from ..conformance_selftest.strangers import late_session
from ..conformance_selftest.strangers.turn_serving import serve_stranger
from .conftest import TIMEOUT_MS

NEVER_MS = 1500
"""The bound of a turn that can never start (nothing opens the page's session): it only
says how long the kit waits before it says so."""


@pytest.fixture(scope="module")
def late_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("late-session") / "late.log"
    with serve_mock() as mock_url, serve_stranger(late_session.Target, mock_url, log) as url:
        yield f"{url}/"


def without_setup(tmp_path: Path) -> Path:
    text = late_session.PROFILE.read_text(encoding="utf-8")
    path = tmp_path / "no-setup.toml"
    path.write_text(text[: text.index("[[setup]]")], encoding="utf-8")
    return path


def test_a_question_the_page_ignored_is_named_as_never_sent(
    page: Page, late_url: str, tmp_path: Path
):
    chat = ChatPage(page, load_profile(without_setup(tmp_path)), late_url, NEVER_MS)
    chat.open()
    with pytest.raises(QuestionNotSent) as caught:
        chat.ask(question("clean", "never-sent"))
    assert str(caught.value) == (
        "the question is still in the composer (#editor): it was never sent (the kit pressed"
        " Enter in it and waited 1.5 s). A page that takes text before its session is ready"
        " ignores it: add a [[setup]] step that waits until the page is ready, wait_for = a"
        ' selector of what the page shows once ready (docs/conformance.md, "A page that is'
        ' not ready at once")'
    )


def test_a_set_up_step_that_waits_for_the_session_lets_the_question_go(page: Page, late_url: str):
    chat = ChatPage(page, load_profile(late_session.PROFILE), late_url, TIMEOUT_MS)
    chat.open()
    view = chat.ask(question("clean", "sent-once-ready"))
    assert view.state == "done"
    assert view.answer.startswith("Backups run nightly")
    assert page.locator("#editor").inner_text() == ""
