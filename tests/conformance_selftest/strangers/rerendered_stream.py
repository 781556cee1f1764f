"""A stranger page that replaces the turn's nodes at every frame while it streams.

Each turn is a `<section class="turn">` with the question (`.asked`) and the answer
(`.reply`, `data-phase="typing"` while it streams, then `"said"` or `"failed"`). Like a
framework that re-renders a component as new elements, the page builds the turn's section
afresh for every frame and swaps it in for the old one: an element found when the turn
started is detached a moment later and never finishes. Earlier turns stay as they are.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .turn_serving import ASK_JS, profile_of

PROFILE = profile_of(__file__)

PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Re-rendering Chat</title></head>
<body>
<div id="turns"></div>
<input id="say" autocomplete="off" placeholder="Ask">
<script>
"use strict";
{ASK_JS}
function render(turn) {{
  const section = document.createElement("section");
  section.className = "turn";
  const asked = document.createElement("h3");
  asked.className = "asked";
  asked.textContent = turn.question;
  const reply = document.createElement("article");
  reply.className = "reply";
  reply.dataset.phase = turn.phase;
  const text = document.createElement("p");
  text.className = "said";
  text.textContent = turn.answer;
  reply.append(text);
  if (turn.error) {{
    const error = document.createElement("p");
    error.className = "failure";
    error.textContent = turn.error;
    reply.append(error);
  }}
  section.append(asked, reply);
  return section;
}}
async function ask(question) {{
  const turn = {{question, answer: "", phase: "typing", error: ""}};
  let shown = render(turn);
  document.getElementById("turns").append(shown);
  const redraw = () => {{ const next = render(turn); shown.replaceWith(next); shown = next; }};
  for await (const frame of frames(question)) {{
    if (frame.type === "delta") turn.answer += frame.text;
    else if (frame.type === "done") turn.phase = "said";
    else if (frame.type === "error") Object.assign(turn, {{phase: "failed", error: frame.detail}});
    redraw();
  }}
  if (turn.phase === "typing") Object.assign(turn, {{phase: "failed", error: "Cut off."}});
  redraw();
}}
const say = document.getElementById("say");
say.addEventListener("keydown", (event) => {{
  if (event.key !== "Enter" || !say.value.trim()) return;
  const question = say.value.trim();
  say.value = "";
  ask(question);
}});
</script>
</body></html>
"""


class Target(BaseTarget):
    MODE = "rerendered-stream"
    PAGE = PAGE
