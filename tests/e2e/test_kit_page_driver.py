"""The kit's page driver (conformance.browser.chat.ChatPage) on pages unlike the reference one.

The foreign page of the kit's self-test covers a contenteditable editor, a late Send
button, a welcome dialog, a model picker and an `appears` rule. These tests cover the rest
of what a profile can say, each on a small chat page of its own that answers in the
browser (no server: the page is served by a Playwright route): Enter to send, a typing
indicator that disappears, the DOM-quiet fallback, `fill` and `wait_for` set-up steps, and
a signed-in storage state. Each page streams its answer in pieces with gaps, so a driver
that ended the turn early would read a partial answer.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from conformance.browser.chat import ChatPage
from conformance.browser.session import new_context
from conformance.profiles.loader import load_profile
from conformance.profiles.model import Profile

from .conftest import TIMEOUT_MS

URL = "http://kit-driver.test/"
ANSWER = "Backups run nightly at two."
SELECTORS = """
[selectors]
input = "#input"
send = "#send"
message = ".msg"
answer = ".text"
error = ".err"
"""


def chat_page(
    *, send_button: bool = True, typing: bool = False, gate: str = "", piece_ms: int = 40
) -> str:
    """A chat page that answers ANSWER word by word, `piece_ms` apart.

    `typing`: a `.typing` indicator outside the message, shown a moment after the question
    and hidden once the answer is complete. `gate`: JavaScript that decides whether the chat
    is shown at all (`start()` shows it).
    """
    button = '<button id="send" type="submit">Send</button>' if send_button else ""
    return f"""<!doctype html><meta charset="utf-8">
<div id="gate"><input id="name"><button id="start" onclick="start()">Start</button></div>
<main id="chat" hidden>
  <div id="thread"></div><div class="typing" hidden>…</div>
  <form id="form"><input id="input" autocomplete="off">{button}</form>
</main>
<script>
  const words = {json.dumps(ANSWER.split(" "))};
  function start() {{ document.getElementById("gate").hidden = true;
                      document.getElementById("chat").hidden = false; }}
  {gate or "start();"}
  const typing = document.querySelector(".typing");
  function ask(question) {{
    const msg = document.createElement("div"); msg.className = "msg";
    const text = document.createElement("span"); text.className = "text";
    msg.append(text); document.getElementById("thread").append(msg);
    if ({json.dumps(typing)}) setTimeout(() => {{ typing.hidden = false; }}, 30);
    words.forEach((word, i) => setTimeout(() => {{
      text.textContent += (i ? " " : "") + word;
      if (i === words.length - 1 && {json.dumps(typing)}) typing.hidden = true;
    }}, 60 + i * {piece_ms}));
  }}
  const input = document.getElementById("input");
  document.getElementById("form").addEventListener("submit", (event) => {{
    event.preventDefault(); ask(input.value); input.value = "";
  }});
</script>"""


def profile_file(tmp_path: Path, text: str) -> Profile:
    path = tmp_path / "profile.toml"
    path.write_text(text, encoding="utf-8")
    return load_profile(path)


def serve(page: Page, html: str) -> None:
    def fulfil(route: Route) -> None:
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=html)

    page.route(URL, fulfil)


def asked(page: Page, profile: Profile, html: str) -> str:
    serve(page, html)
    chat = ChatPage(page, profile, URL, TIMEOUT_MS)
    chat.open()
    view = chat.ask("When do backups run?")
    assert view.state == "done", view
    return view.answer


def test_enter_sends_when_the_page_has_no_send_button(page: Page, tmp_path: Path):
    profile = profile_file(tmp_path, SELECTORS + '[input]\nsend_with = "enter"\n'
                           '[done]\nattribute = ""\nquiet_ms = 400\n')  # fmt: skip
    assert asked(page, profile, chat_page(send_button=False)) == ANSWER


def test_a_disappearing_indicator_ends_the_turn_only_once_the_answer_is_whole(
    page: Page, tmp_path: Path
):
    """The indicator shows only after the question is sent: hidden-then-quiet must not end
    the turn before it has even appeared."""
    profile = profile_file(tmp_path, SELECTORS + '[done]\nattribute = ""\n'
                           'disappears = ".typing"\nquiet_ms = 300\n')  # fmt: skip
    assert asked(page, profile, chat_page(typing=True)) == ANSWER


def test_the_quiet_fallback_waits_until_the_dom_stays_still(page: Page, tmp_path: Path):
    profile = profile_file(tmp_path, SELECTORS + '[done]\nattribute = ""\nquiet_ms = 400\n')
    assert asked(page, profile, chat_page(piece_ms=80)) == ANSWER


def test_fill_and_wait_for_steps_run_before_the_first_turn(page: Page, tmp_path: Path):
    profile = profile_file(
        tmp_path,
        SELECTORS + '[done]\nattribute = ""\nquiet_ms = 400\n'
        '[[setup]]\nfill = "#name"\ntext = "kit"\n'
        '[[setup]]\nclick = "#start"\n'
        '[[setup]]\nwait_for = "#input"\n',
    )
    html = chat_page(gate="document.getElementById('name').oninput = null;")
    assert asked(page, profile, html) == ANSWER
    assert page.locator("#name").input_value() == "kit"


@pytest.fixture
def signed_in_page(browser: Browser, tmp_path: Path) -> Generator[tuple[Page, Profile]]:
    state = tmp_path / "signed-in.json"
    origin = {"origin": URL.rstrip("/"), "localStorage": [{"name": "token", "value": "kit"}]}
    state.write_text(json.dumps({"cookies": [], "origins": [origin]}), encoding="utf-8")
    profile = profile_file(tmp_path, SELECTORS + '[done]\nattribute = ""\nquiet_ms = 400\n'
                           '[session]\nstorage_state = "signed-in.json"\n')  # fmt: skip
    context = new_context(browser, profile)
    try:
        yield context.new_page(), profile
    finally:
        context.close()


def test_a_storage_state_signs_the_page_in(signed_in_page: tuple[Page, Profile]):
    page, profile = signed_in_page
    html = chat_page(gate="if (localStorage.getItem('token') === 'kit') start();")
    assert asked(page, profile, html) == ANSWER


RESTORING_PAGE = f"""{chat_page()}
<script>
  // Keeps its tab's answers in sessionStorage and shows them again on load, as the
  // reference page does from the server.
  for (const old of JSON.parse(sessionStorage.getItem("thread") || "[]")) {{
    const msg = document.createElement("div"); msg.className = "msg restored";
    msg.textContent = old; document.getElementById("thread").append(msg);
  }}
  new MutationObserver(() => sessionStorage.setItem("thread", JSON.stringify(
    [...document.querySelectorAll(".msg .text")].map((t) => t.textContent))))
    .observe(document.getElementById("thread"), {{subtree: true, childList: true,
                                                  characterData: true}});
</script>"""


def test_each_open_starts_as_a_new_tab_so_a_tabs_restored_answers_are_not_on_the_page(
    page: Page, tmp_path: Path
):
    profile = profile_file(tmp_path, SELECTORS + '[done]\nattribute = ""\nquiet_ms = 400\n')
    serve(page, RESTORING_PAGE)
    chat = ChatPage(page, profile, URL, TIMEOUT_MS)
    chat.open()
    assert chat.ask("When do backups run?").answer == ANSWER
    page.reload()
    expect(page.locator(".msg.restored")).to_have_count(1)  # the page does restore

    chat.open()

    expect(page.locator(".msg")).to_have_count(0)
    assert ANSWER not in chat.recorded()
