"""A stranger's chat page, with the parts a profile may declare present or not, and its
profile: the shared base of the cases whose page lacks a part or ends a turn its own way.

The page (`render`) shares nothing with the reference page but the targets' chat API
(`POST /api/chat`, targets.base): class names only (`.sp-*`), a thread of `.sp-bot` bubbles
whose `data-phase` is `streaming`, then `finished`; inside each an optional reasoning
`details.sp-think`, the answer `.sp-text` and the error box; a Stop button shown only while
a turn streams; or, as Gradio shows a failed turn, a toast outside the thread
(`[data-testid=toast-body].error [data-testid=toast-text]`) and no bubble for a turn that
showed nothing. `PageOptions` turns each part off or bends how a turn ends. `PROFILE` is the
profile that describes the whole page (a case changes the lines it needs); a case's
target (a BaseTarget with this `PAGE`) is served by `turn_serving.serve_stranger`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..targets.page import READ_FRAMES_JS


@dataclass(frozen=True)
class PageOptions:
    thinking: bool = True  # a reasoning display
    stop: bool = True  # a Stop button while a turn streams
    error_class: str = "sp-err"  # the error box's class
    error_prefix: str = ""  # put before the error's detail, as a framework's display does
    stop_stays_on_error: bool = False  # the Stop button stays up after a turn's error
    stall_on_retry: bool = False  # a recovery frame freezes the turn for good
    # A failed turn's error as a toast outside the thread, as Gradio's gr.Error shows it,
    # with no bubble for a turn that showed nothing yet ("": in the bubble's error box):
    # "left" stays up, "hidden" is hidden once the next question is sent (not on a timer:
    # no verdict may depend on how soon the kit looks).
    toast: str = ""


_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>stranger page</title>
  <style>
    .sp-msg { border: 1px solid #ccc; margin: .5rem 0; padding: .5rem; }
    .sp-err, .sp-alert { color: #a00; }
  </style>
</head>
<body>
  <div class="sp-thread"></div>
  <div class="sp-toasts" aria-live="polite"></div>
  <div class="sp-compose">
    <textarea class="sp-input" rows="2"></textarea>
    <button type="button" class="sp-send">Ask</button>
    __STOP__
  </div>
  <script>
"use strict";
(() => {
  const CONFIG = __CONFIG__;
  const thread = document.querySelector(".sp-thread");
  const input = document.querySelector(".sp-input");
  const send = document.querySelector(".sp-send");
  const stop = document.querySelector(".sp-stop");
  const toasts = document.querySelector(".sp-toasts");
  let controller = null;

__READ_FRAMES__
  function bubble() {
    const root = document.createElement("div");
    root.className = "sp-msg sp-bot";
    root.dataset.phase = "streaming";
    let think = null;
    if (CONFIG.thinking) {
      think = document.createElement("details");
      think.className = "sp-think";
      think.open = true;
      think.hidden = true;
      root.append(think);
    }
    const text = document.createElement("div");
    text.className = "sp-text";
    const err = document.createElement("div");
    err.className = CONFIG.error_class;
    err.hidden = true;
    root.append(text, err);
    thread.append(root);
    return { root, think, text, err };
  }

  function busy(on) {
    send.disabled = on;
    if (stop) stop.hidden = !on;
  }

  // The turn's bubble: made at once, or (toast pages) once the turn first shows something.
  function turnBubble() {
    let made = null;
    const get = () => (made ??= bubble());
    if (!CONFIG.toast) get();
    return { get, made: () => made };
  }

  function toast(detail) {
    const body = document.createElement("div");
    body.className = "toast-body error";
    body.dataset.testid = "toast-body";
    const text = document.createElement("div");
    text.dataset.testid = "toast-text";
    text.textContent = detail;
    body.append(text);
    toasts.append(body);
  }

  function failed(turn, detail) {
    const text = CONFIG.error_prefix + detail;
    const view = CONFIG.toast ? turn.made() : turn.get();
    if (view) view.root.dataset.phase = "finished";
    if (CONFIG.toast) {
      toast(text);
    } else {
      view.err.hidden = false;
      view.err.textContent = text;
    }
  }

  async function ask(question) {
    const user = document.createElement("div");
    user.className = "sp-msg sp-user";
    user.textContent = question;
    thread.append(user);
    const turn = turnBubble();
    controller = new AbortController();
    const signal = controller.signal;
    busy(true);
    let outcome = "cut";
    try {
      const response = await fetch("/api/chat", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: question }),
        signal,
      });
      if (!response.ok) {
        outcome = "error";
        failed(turn, `The server answered ${response.status}.`);
        return;
      }
      for await (const frame of readFrames(response)) {
        if (frame.type === "thinking" && CONFIG.thinking) {
          const think = turn.get().think;
          think.hidden = false;
          think.textContent += frame.text;
        } else if (frame.type === "delta") {
          turn.get().text.textContent += frame.text;
        } else if (frame.type === "retry" && CONFIG.stall_on_retry) {
          outcome = "stalled";
          return;
        } else if (frame.type === "done") {
          outcome = "done";
          turn.get().root.dataset.phase = "finished";
        } else if (frame.type === "error") {
          outcome = "error";
          failed(turn, frame.detail);
        }
      }
      if (outcome === "cut") {
        outcome = "error";
        failed(turn, "The answer was cut off.");
      }
    } catch (error) {
      if (signal.aborted) {
        outcome = "done";
        turn.get().root.dataset.phase = "finished";
      } else {
        outcome = "error";
        failed(turn, "The connection failed.");
      }
    } finally {
      controller = null;
      if (outcome === "error" && CONFIG.stop_stays_on_error) {
        send.disabled = false;
      } else if (outcome !== "stalled") {
        busy(false);
      }
    }
  }

  send.addEventListener("click", () => {
    const question = input.value.trim();
    if (!question || controller !== null) return;
    input.value = "";
    if (CONFIG.toast === "hidden") {
      for (const shown of toasts.children) shown.hidden = true;
    }
    ask(question);
  });
  if (stop) stop.addEventListener("click", () => controller?.abort());
})();
  </script>
</body>
</html>
"""

PROFILE = """
name = "stranger-page"

[selectors]
input = "textarea.sp-input"
send = "button.sp-send"
message = ".sp-thread > .sp-bot"
answer = ".sp-text"
error = ".sp-err"
stop = "button.sp-stop"
thinking = "details.sp-think"

[done]
attribute = "data-phase"

[capabilities]
thinking = true
stop = true
log = false
tools = true
"""
"""The profile of the whole page as `PageOptions()` draws it."""


def render(options: PageOptions) -> str:
    """The page with `options`."""
    stop = '<button type="button" class="sp-stop" hidden>Stop</button>' if options.stop else ""
    page = _PAGE.replace("__READ_FRAMES__", READ_FRAMES_JS).replace("__STOP__", stop)
    return page.replace("__CONFIG__", json.dumps(asdict(options)))
