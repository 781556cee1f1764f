"""A stranger page that redraws its whole conversation at every change, successful turns only.

The page keeps the conversation as data and draws it from scratch on every frame (every
node new each time, as a framework without keyed reuse does): each kept turn is the user's
bubble (`.bubble.user`, the question as asked) and the answer's (`.bubble.bot`, its
`data-state` `streaming`, `done` or `error`), then the turn in progress. A turn that ends
in an error stays on screen with its error until the next question, and is then dropped:
only successful answers are kept. So after an error turn the next answer has the place the
error had: a kit that counts messages waits for one more, forever.
"""

from __future__ import annotations

from ..targets.base import BaseTarget
from .turn_serving import ASK_JS, profile_of

PROFILE = profile_of(__file__)

PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Redraw Chat</title></head>
<body>
<main>
  <div id="conversation"></div>
  <form id="composer"><textarea id="prompt"></textarea><button id="go">Ask</button></form>
</main>
<script>
"use strict";
{ASK_JS}
const kept = [];  // successful turns only
let current = null;
const conversation = document.getElementById("conversation");
function bubble(kind, text) {{
  const node = document.createElement("div");
  node.className = `bubble ${{kind}}`;
  const body = document.createElement("div");
  body.className = "body";
  body.textContent = text;
  node.append(body);
  return node;
}}
function draw() {{
  const turns = current ? [...kept, current] : kept;
  conversation.replaceChildren(...turns.flatMap((turn) => {{
    const reply = bubble("bot", turn.answer);
    reply.dataset.state = turn.state;
    if (turn.error) {{
      const error = document.createElement("p");
      error.className = "oops";
      error.textContent = turn.error;
      reply.append(error);
    }}
    return [bubble("user", turn.question), reply];
  }}));
}}
async function ask(question) {{
  current = {{question, answer: "", state: "streaming", error: ""}};  // an error turn: gone
  draw();
  for await (const frame of frames(question)) {{
    if (frame.type === "delta") current.answer += frame.text;
    else if (frame.type === "done") current.state = "done";
    else if (frame.type === "error") Object.assign(current, {{state: "error",
                                                               error: frame.detail}});
    draw();
  }}
  if (current.state === "streaming") Object.assign(current, {{state: "error", error: "Cut off."}});
  if (current.state === "done") {{ kept.push(current); current = null; }}
  draw();
}}
const prompt = document.getElementById("prompt");
document.getElementById("composer").addEventListener("submit", (event) => {{
  event.preventDefault();
  const question = prompt.value.trim();
  if (!question || current?.state === "streaming") return;
  prompt.value = "";
  ask(question);
}});
</script>
</body></html>
"""


class Target(BaseTarget):
    MODE = "redraw-conversation"
    PAGE = PAGE
