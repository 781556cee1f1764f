"""An error the page still shows from an earlier turn (a banner outside every message, left
up) is not the next turn's: the next turn ends by its own done rule and reads as done.

Regression: with a turn's end being "the done rule or the error showing", a banner left up
after an error ended the next turn at once, as an error turn, before its answer streamed.
The page is served by a Playwright route and answers in the browser; its second answer
streams in pieces with gaps, so a turn ended early would read a partial answer.
"""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, Route

from conformance.browser.chat import ChatPage
from conformance.profiles.loader import load_profile

from .conftest import TIMEOUT_MS

URL = "http://kit-stale-error.test/"
ANSWER = "Backups run nightly at two."
PAGE = f"""<!doctype html><meta charset="utf-8">
<div id="thread"></div><p class="err" hidden></p>
<form id="form"><input id="input" autocomplete="off"><button id="send">Send</button></form>
<script>
  const words = {json.dumps(ANSWER.split(" "))};
  let turns = 0;
  document.getElementById("form").addEventListener("submit", (event) => {{
    event.preventDefault();
    const input = document.getElementById("input");
    const msg = document.createElement("div"); msg.className = "msg";
    msg.dataset.state = "streaming";
    const text = document.createElement("span"); text.className = "text";
    msg.append(text); document.getElementById("thread").append(msg);
    input.value = "";
    if (++turns === 1) {{  // the first turn fails: a banner outside the messages, left up
      setTimeout(() => {{
        const err = document.querySelector(".err");
        err.textContent = "The model returned a malformed reply."; err.hidden = false;
        msg.dataset.state = "error";
      }}, 50);
      return;
    }}
    words.forEach((word, i) => setTimeout(() => {{
      text.textContent += (i ? " " : "") + word;
      if (i === words.length - 1) msg.dataset.state = "done";
    }}, 80 + i * 60));
  }});
</script>"""
PROFILE = """
[selectors]
input = "#input"
send = "#send"
message = ".msg"
answer = ".text"
error = ".err"
[done]
attribute = "data-state"
"""


def test_an_error_banner_left_up_is_not_the_next_turns_error(page: Page, tmp_path: Path):
    def fulfil(route: Route) -> None:
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=PAGE)

    page.route(URL, fulfil)
    path = tmp_path / "profile.toml"
    path.write_text(PROFILE, encoding="utf-8")
    chat = ChatPage(page, load_profile(path), URL, TIMEOUT_MS)
    chat.open()
    failed = chat.ask("When do backups run? [[mock:scaffold-repeat#k1]]")
    assert (failed.state, failed.error) == ("error", "The model returned a malformed reply.")
    answered = chat.ask("When do backups run? [[mock:clean#k2]]")
    assert (answered.state, answered.answer, answered.error) == ("done", ANSWER, "")
