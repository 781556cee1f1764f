"""A stranger page whose composer takes text at once but sends nothing until its session is
ready.

The composer (a contenteditable editor) is there and editable from the start, but Enter
sends only once the page has a session: the page opens one when "Start chatting" is
clicked (`#start`), and has it when that request (`GET /healthz`) has answered; it then
marks `<body data-session="ready">`. Before that, Enter is swallowed and the question stays
in the composer, as on pages that let a person type while they connect. Its profile's
set-up clicks the button and waits for the mark; without those steps no question is ever
sent.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .turn_serving import ASK_JS, profile_of

PROFILE = profile_of(__file__)

PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Late Session Chat</title></head>
<body data-session="none">
<button id="start" type="button">Start chatting</button>
<ol id="log"></ol>
<div id="editor" contenteditable="true" role="textbox" aria-label="Message"></div>
<script>
"use strict";
{ASK_JS}
let session = null;
document.getElementById("start").addEventListener("click", async () => {{
  document.body.dataset.session = "opening";
  await (await fetch("/healthz")).json();
  session = "open";
  document.body.dataset.session = "ready";
}});
const log = document.getElementById("log");
async function ask(question) {{
  const mine = document.createElement("li");
  mine.className = "me";
  mine.textContent = question;
  const card = document.createElement("li");
  card.className = "answer-card";
  card.dataset.state = "streaming";
  const text = document.createElement("div");
  text.className = "text";
  const problem = document.createElement("div");
  problem.className = "problem";
  card.append(text, problem);
  const fail = (detail) => {{ problem.textContent = detail; card.dataset.state = "error"; }};
  log.append(mine, card);
  for await (const frame of frames(question)) {{
    if (frame.type === "delta") text.textContent += frame.text;
    else if (frame.type === "done") card.dataset.state = "done";
    else if (frame.type === "error") fail(frame.detail);
  }}
  if (card.dataset.state === "streaming") fail("Cut off.");
}}
const editor = document.getElementById("editor");
editor.addEventListener("keydown", (event) => {{
  if (event.key !== "Enter") return;
  event.preventDefault();
  const question = editor.innerText.trim();
  if (session === null || !question) return;  // no session yet: the keypress is lost
  editor.textContent = "";
  ask(question);
}});
</script>
</body></html>
"""


class Target(BaseTarget):
    MODE = "late-session"
    PAGE = PAGE
