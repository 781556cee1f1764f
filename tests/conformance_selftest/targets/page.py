"""The chat page every target serves at `/`: the reference app's hooks, inline JavaScript.

The page carries the same stable hooks as frontend/index.html (docs/frontend.md):
`chat-input` (a textarea: Enter sends, Shift+Enter starts a new line), `chat-send`,
`chat-stop` (aborts the fetch), one `message-assistant` per answer with
`data-state="streaming" | "done" | "error"` (a stopped turn is `done` with
`data-stopped="true"`), and inside it `thinking`, `chat-retry`, `answer` (plain text) and
`chat-error`. It reads the turn's frames from `POST /api/chat` and has no dependencies.

How the answer is drawn is the one thing a target may change: the page's `HOOKS` object
(`delta`, `raw`, `retry`, `end`) is the default below, overridden by the target's
`PAGE_HOOKS`, a JavaScript object literal. The default keeps the answer element's text equal
to the delta text received so far, and ignores `raw` frames.
"""

from __future__ import annotations

import html

READ_FRAMES_JS = """  async function* readFrames(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\\n\\n")) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        for (const line of event.split("\\n")) {
          if (line.startsWith("data: ")) yield JSON.parse(line.slice(6));
        }
      }
    }
  }
"""
"""`readFrames(response)`: the `data:` frames of a `POST /api/chat` response, parsed, as
they arrive (an async generator; JavaScript, for any page over the targets' chat API)."""

_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>conformance target: __MODE__</title>
  <style>
    body { font: 15px/1.4 system-ui, sans-serif; max-width: 48rem; margin: 1rem auto; }
    .message { border: 1px solid #ccc; border-radius: 6px; padding: .5rem; margin: .5rem 0; }
    .answer { white-space: pre-wrap; }
    .error { color: #a00; }
  </style>
</head>
<body data-target-mode="__MODE__">
  <main>
    <section data-testid="chat-log" aria-label="Conversation"></section>
    <form data-testid="chat-form">
      <label for="chat-input">Your question</label>
      <textarea id="chat-input" data-testid="chat-input" rows="2" maxlength="4000"></textarea>
      <button type="submit" data-testid="chat-send">Send</button>
      <button type="button" data-testid="chat-stop" disabled>Stop</button>
    </form>
  </main>
  <template id="assistant-template">
    <article class="message" data-testid="message-assistant" data-state="streaming">
      <details data-testid="thinking" hidden>
        <summary>Thinking</summary>
        <pre class="thinking-text"></pre>
      </details>
      <p data-testid="chat-retry" role="status" hidden></p>
      <div class="answer" data-testid="answer"></div>
      <p class="error" data-testid="chat-error" role="alert" hidden></p>
      <p class="status"></p>
    </article>
  </template>
  <script>
"use strict";
(() => {
  const $ = (selector, root = document) => root.querySelector(selector);
  const form = $("[data-testid=chat-form]");
  const input = $("[data-testid=chat-input]");
  const sendButton = $("[data-testid=chat-send]");
  const stopButton = $("[data-testid=chat-stop]");
  const log = $("[data-testid=chat-log]");
  const template = $("#assistant-template");
  const DEFAULT_HOOKS = {
    delta(view, text) {
      view.text += text;
      view.answer.textContent = view.text;
    },
    raw(view, text) {},
    retry(view, frame) {},
    end(view, frame) {},
  };
  const HOOKS = { ...DEFAULT_HOOKS, ...(__HOOKS__) };
  let controller = null;

__READ_FRAMES__
  function newView() {
    const root = template.content.firstElementChild.cloneNode(true);
    log.append(root);
    return {
      root,
      text: "",
      thinking: $("[data-testid=thinking]", root),
      thinkingText: $(".thinking-text", root),
      retry: $("[data-testid=chat-retry]", root),
      answer: $("[data-testid=answer]", root),
      error: $("[data-testid=chat-error]", root),
      status: $(".status", root),
    };
  }

  function fail(view, detail) {
    view.retry.hidden = true;
    view.error.hidden = false;
    view.error.textContent = detail;
    view.root.dataset.state = "error";
  }

  function setBusy(busy) {
    sendButton.disabled = busy;
    stopButton.disabled = !busy;
  }

  async function ask(question) {
    const user = document.createElement("p");
    user.dataset.testid = "message-user";
    user.textContent = question;
    log.append(user);
    const view = newView();
    controller = new AbortController();
    const signal = controller.signal;
    setBusy(true);
    let ended = false;
    try {
      const response = await fetch("/api/chat", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: question }),
        signal,
      });
      if (!response.ok) {
        fail(view, `The server answered ${response.status}.`);
        ended = true;
        return;
      }
      for await (const frame of readFrames(response)) {
        if (frame.type === "thinking") {
          view.thinking.hidden = false;
          view.thinkingText.textContent += frame.text;
        } else if (frame.type === "delta") {
          HOOKS.delta(view, frame.text);
        } else if (frame.type === "raw") {
          HOOKS.raw(view, frame.text);
        } else if (frame.type === "retry") {
          view.retry.hidden = false;
          view.retry.textContent = "The model's reply was not usable; asking it again…";
          const thought = view.thinkingText;
          if (thought.textContent) thought.textContent += "\\n\\n— asked again —\\n\\n";
          HOOKS.retry(view, frame);
        } else if (frame.type === "done") {
          HOOKS.end(view, frame);
          view.retry.hidden = true;
          view.root.dataset.state = "done";
          ended = true;
        } else if (frame.type === "error") {
          HOOKS.end(view, frame);
          fail(view, frame.detail);
          ended = true;
        }
      }
      if (!ended) fail(view, "The answer was cut off — please try again.");
    } catch (error) {
      if (signal.aborted) {
        view.retry.hidden = true;
        view.status.textContent = "Stopped.";
        view.root.dataset.stopped = "true";
        view.root.dataset.state = "done";
      } else {
        fail(view, "The connection to the server failed — please try again.");
      }
    } finally {
      controller = null;
      setBusy(false);
      input.focus();
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question || controller !== null) return;
    input.value = "";
    ask(question);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  stopButton.addEventListener("click", () => controller?.abort());
})();
  </script>
</body>
</html>
"""


def render_page(mode: str, hooks: str) -> str:
    """The page for a target `mode`, its `hooks` (a JavaScript object literal) spliced in."""
    page = _PAGE.replace("__READ_FRAMES__", READ_FRAMES_JS)
    return page.replace("__MODE__", html.escape(mode)).replace("__HOOKS__", hooks)
