"""Which assistant message is the turn's (conformance.browser.chat.ChatPage), on stranger pages.

The kit finds a turn's message by the question it sent: the first assistant message after
the place the page shows the question's KEY (`[turn] find = "after-question"`, the
default), and looks it up again at every step of the turn. These tests drive ChatPage with
a real browser against the strangers of tests/conformance_selftest/strangers (served over
the targets' /api/chat, with mock_llm's built-in flows) and against small pages answered
in the browser: a page that redraws its whole conversation and keeps only successful
answers, one that replaces the turn's nodes while it streams, one that draws its
conversation in a shadow root, and the messages for a turn whose message never shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route

from conformance.browser.chat import ChatPage
from conformance.browser.turn_message import NoTurnMessage
from conformance.profiles.loader import load_profile
from conformance.profiles.model import Profile
from conformance.run.questions import question
from mock_llm import MockClient, serve_mock

from ..conformance_selftest.strangers import redraw_conversation, rerendered_stream
from ..conformance_selftest.strangers.turn_serving import serve_stranger
from ..conformance_selftest.targets.base import MALFORMED_REPLY
from ..support.deadlines import DEADLINE_S
from .conftest import TIMEOUT_MS

NEVER_MS = 1500
"""The bound of a turn that can never show (the page has no answer at all): it only says
how long the kit waits before it says so."""


class Served:
    def __init__(self, mock_url: str, urls: dict[str, str]) -> None:
        self.mock_url = mock_url
        self.urls = urls
        with MockClient(mock_url, timeout=DEADLINE_S) as mock:
            clean = next(flow for flow in mock.flows() if flow.name == "clean")
        assert clean.expect is not None
        self.clean_answer = clean.expect.shown


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    logs = tmp_path_factory.mktemp("stranger-logs")
    with (
        serve_mock() as mock_url,
        serve_stranger(redraw_conversation.Target, mock_url, logs / "redraw.log") as redraw,
        serve_stranger(rerendered_stream.Target, mock_url, logs / "rerender.log") as rerender,
    ):
        yield Served(mock_url, {"redraw": f"{redraw}/", "rerender": f"{rerender}/"})


def with_keys(profile: Path, tmp_path: Path, extra: str) -> Profile:
    """The stranger's profile with `extra` TOML appended (a key of its own section)."""
    path = tmp_path / profile.name
    path.write_text(profile.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return load_profile(path)


def error_then_clean(page: Page, profile: Profile, url: str, served: Served) -> None:
    chat = ChatPage(page, profile, url, TIMEOUT_MS)
    chat.open()
    failed = chat.ask(question("scaffold-repeat", "turn-error"))
    assert (failed.state, failed.error) == ("error", MALFORMED_REPLY)
    again = chat.ask(question("clean", "turn-after"))
    assert (again.state, again.answer, again.error) == ("done", served.clean_answer, "")


def test_after_an_error_turn_the_next_answer_is_found_on_a_page_that_redraws_and_drops_it(
    page: Page, served: Served
):
    """The error turn's message is dropped when the next question is sent: the next answer
    takes its place, so there are as many messages as before the question."""
    profile = load_profile(redraw_conversation.PROFILE)
    error_then_clean(page, profile, served.urls["redraw"], served)


def test_the_last_message_rule_finds_the_answer_on_a_page_that_redraws_and_drops_it(
    page: Page, served: Served, tmp_path: Path
):
    profile = with_keys(redraw_conversation.PROFILE, tmp_path, '[turn]\nfind = "last"\n')
    error_then_clean(page, profile, served.urls["redraw"], served)


def test_a_user_message_selector_anchors_the_turn_on_the_users_bubble(
    page: Page, served: Served, tmp_path: Path
):
    text = redraw_conversation.PROFILE.read_text(encoding="utf-8").replace(
        "[selectors]\n", '[selectors]\nuser_message = ".bubble.user"\n'
    )
    (tmp_path / "users.toml").write_text(text, encoding="utf-8")
    profile = load_profile(tmp_path / "users.toml")
    assert profile.selectors.user_message == ".bubble.user"
    error_then_clean(page, profile, served.urls["redraw"], served)


def test_a_page_that_replaces_the_turns_nodes_while_streaming_is_followed_to_its_end(
    page: Page, served: Served
):
    """The state attribute is read on the turn's message as it is now, not on the element
    the turn started with (detached after the first frame)."""
    chat = ChatPage(page, load_profile(rerendered_stream.PROFILE), served.urls["rerender"],
                    TIMEOUT_MS)  # fmt: skip
    chat.open()
    first = chat.ask(question("clean", "rerender-1"))
    failed = chat.ask(question("scaffold-repeat", "rerender-2"))
    again = chat.ask(question("clean", "rerender-3"))
    assert (first.state, first.answer) == ("done", served.clean_answer)
    assert (failed.state, failed.error, failed.answer) == ("error", MALFORMED_REPLY, "")
    assert (again.state, again.answer) == ("done", served.clean_answer)


def test_counting_messages_still_finds_the_turn_where_the_page_keeps_every_answer(
    page: Page, served: Served, tmp_path: Path
):
    profile = with_keys(rerendered_stream.PROFILE, tmp_path, '[turn]\nfind = "count"\n')
    chat = ChatPage(page, profile, served.urls["rerender"], TIMEOUT_MS)
    chat.open()
    assert chat.ask(question("clean", "count-1")).answer == served.clean_answer
    assert chat.ask(question("clean", "count-2")).answer == served.clean_answer


# --- pages answered in the browser ------------------------------------------------------

URL = "http://kit-turns.test/"
ANSWER = "Backups run nightly at two."
IN_PAGE_PROFILE = """
[selectors]
input = "#input"
message = ".msg"
answer = ".text"
error = ".err"
[input]
send_with = "enter"
[done]
attribute = "data-state"
"""


def in_page_chat(*, show_question: bool, answer: bool, shadow: bool = False) -> str:
    """A page whose conversation lives in `<chat-log>` (in its open shadow root with
    `shadow`): Enter shows the question (with `show_question`) and then the answer (with
    `answer`) in two pieces."""
    return f"""<!doctype html><meta charset="utf-8">
<chat-log></chat-log><input id="input" autocomplete="off">
<script>
  const host = document.querySelector("chat-log");
  const log = {"host.attachShadow({mode: 'open'})" if shadow else "host"};
  const input = document.getElementById("input");
  input.addEventListener("keydown", (event) => {{
    if (event.key !== "Enter") return;
    const asked = document.createElement("p");
    asked.textContent = input.value;
    input.value = "";
    if ({str(show_question).lower()}) log.append(asked);
    if (!{str(answer).lower()}) return;
    const msg = document.createElement("div"); msg.className = "msg";
    msg.dataset.state = "streaming";
    const text = document.createElement("span"); text.className = "text";
    msg.append(text); log.append(msg);
    const words = {ANSWER.split(" ")!r};
    const next = (i) => {{
      if (i === words.length) {{ msg.dataset.state = "done"; return; }}
      text.textContent += (i ? " " : "") + words[i];
      requestAnimationFrame(() => next(i + 1));
    }};
    requestAnimationFrame(() => next(0));
  }});
</script>"""


def in_page(page: Page, tmp_path: Path, html: str, timeout_ms: float) -> ChatPage:
    def fulfil(route: Route) -> None:
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=html)

    page.route(URL, fulfil)
    path = tmp_path / "in-page.toml"
    path.write_text(IN_PAGE_PROFILE, encoding="utf-8")
    chat = ChatPage(page, load_profile(path), URL, timeout_ms)
    chat.open()
    return chat


def test_a_conversation_drawn_in_a_shadow_root_is_found_by_the_question(page: Page, tmp_path: Path):
    chat = in_page(page, tmp_path, in_page_chat(show_question=True, answer=True, shadow=True),
                   TIMEOUT_MS)  # fmt: skip
    for key in ("shadow-1", "shadow-2"):
        view = chat.ask(question("clean", key))
        assert (view.state, view.answer) == ("done", ANSWER)


def test_a_question_shown_with_no_answer_after_it_is_named_so(page: Page, tmp_path: Path):
    chat = in_page(page, tmp_path, in_page_chat(show_question=True, answer=False), NEVER_MS)
    with pytest.raises(NoTurnMessage) as caught:
        chat.ask(question("clean", "unanswered"))
    assert str(caught.value) == (
        "the page shows the question, but no assistant message (.msg) followed it within 1.5 s"
    )


def test_a_page_that_shows_no_question_is_counted_and_the_count_is_named(
    page: Page, tmp_path: Path
):
    chat = in_page(page, tmp_path, in_page_chat(show_question=False, answer=False), NEVER_MS)
    with pytest.raises(NoTurnMessage) as caught:
        chat.ask(question("clean", "unshown"))
    assert str(caught.value) == (
        "no new assistant message (.msg) showed within 1.5 s (the page shows the question's"
        " KEY unshown nowhere outside the composer, so the kit counted messages: 0 before"
        " the question, 0 now)"
    )
