// The chat page: send a question, stream the turn's frames into an assistant message.
//
// Frames (see docs/architecture.md): start, thinking, tool, retry (a transport retry, or
// reason "recovery": the guardrail's one recovery request), delta, then done or error. The assistant message carries data-state="streaming" | "done" | "error"; tests
// and the conformance kit rely on that and on the data-testid hooks in index.html.
import { readFrames } from "./stream.js";
import { renderMarkdown } from "./render.js";

const $ = (selector, root = document) => root.querySelector(selector);
const RECOVERY_SEPARATOR = "\n\n— asked again —\n\n";

const form = $("[data-testid=chat-form]");
const input = $("[data-testid=chat-input]");
const sendButton = $("[data-testid=chat-send]");
const stopButton = $("[data-testid=chat-stop]");
const log = $("[data-testid=chat-log]");
const announcer = $("[data-testid=announcer]");
const historyList = $("[data-testid=history]");
const historyEmpty = $("[data-testid=history-empty]");
const template = $("#assistant-template");

let current = null; // the turn being streamed: {controller, view}

function addUserMessage(text) {
  const article = document.createElement("article");
  article.className = "message user";
  article.dataset.testid = "message-user";
  const p = document.createElement("p");
  p.textContent = text;
  article.append(p);
  log.append(article);
}

/** The DOM of one assistant message, and how to update it. */
function assistantView() {
  const root = template.content.firstElementChild.cloneNode(true);
  log.append(root);
  const parts = {
    thinking: $(".thinking", root),
    thinkingText: $(".thinking-text", root),
    tools: $(".tools", root),
    retry: $(".retry", root),
    answer: $(".answer", root),
    error: $(".error", root),
    sources: $(".sources", root),
    status: $(".status", root),
  };
  let answerText = "";
  let renderQueued = false;

  function render() {
    renderQueued = false;
    parts.answer.replaceChildren(renderMarkdown(answerText));
  }

  return {
    root,
    get answerText() {
      return answerText;
    },
    appendAnswer(text) {
      answerText += text;
      if (!renderQueued) {
        renderQueued = true;
        requestAnimationFrame(render);
      }
    },
    appendThinking(text) {
      parts.thinking.hidden = false;
      parts.thinkingText.textContent += text;
    },
    addTool(frame) {
      parts.tools.hidden = false;
      const chip = document.createElement("li");
      chip.className = frame.ok ? "chip" : "chip refused";
      chip.dataset.testid = "tool-call";
      chip.dataset.tool = frame.name;
      const where = frame.path ?? argumentSummary(frame.arguments);
      chip.textContent = `${frame.name}${where ? ` ${where}` : ""}${frame.ok ? "" : " (refused)"}`;
      parts.tools.append(chip);
    },
    showRetry(frame) {
      parts.retry.hidden = false;
      if (frame.reason === "recovery") {
        // The guardrail's one recovery: the failed round showed nothing; its thinking stays,
        // and the recovery's thinking starts apart from it.
        parts.retry.textContent = "The model's reply was not usable; asking it again…";
        if (parts.thinkingText.textContent) parts.thinkingText.textContent += RECOVERY_SEPARATOR;
        return;
      }
      parts.retry.textContent =
        `The model service did not answer (${frame.reason}); ` +
        `trying again in ${Number(frame.delay_s).toFixed(1)} s (attempt ${frame.attempt}).`;
    },
    finish(frame) {
      render();
      parts.retry.hidden = true;
      const sources = frame.sources ?? [];
      if (sources.length > 0) {
        const list = $("ul", parts.sources);
        for (const path of sources) {
          const item = document.createElement("li");
          item.textContent = path;
          list.append(item);
        }
        parts.sources.hidden = false;
      }
      setState("done");
    },
    fail(detail) {
      render();
      parts.retry.hidden = true;
      parts.error.hidden = false;
      parts.error.textContent = detail;
      setState("error");
    },
    stopped() {
      render();
      parts.retry.hidden = true;
      parts.status.textContent = "Stopped.";
      root.dataset.stopped = "true";
      setState("done");
    },
  };

  function setState(state) {
    root.dataset.state = state;
    root.setAttribute("aria-busy", "false");
  }
}

function argumentSummary(argumentsText) {
  try {
    const args = JSON.parse(argumentsText);
    return args.path ?? args.pattern ?? "";
  } catch {
    return "";
  }
}

function setBusy(busy) {
  sendButton.disabled = busy;
  stopButton.disabled = !busy;
  form.setAttribute("aria-busy", String(busy));
}

function announce(text) {
  announcer.textContent = text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

async function errorDetail(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) return body.detail.map((d) => d.msg).join("; ");
  } catch {
    // fall through to the generic line
  }
  return `The server answered ${response.status}.`;
}

async function ask(question) {
  if (current !== null) return; // one turn at a time
  addUserMessage(question);
  const view = assistantView();
  const controller = new AbortController();
  current = { controller, view };
  setBusy(true);
  let ended = false;
  try {
    const response = await fetch("/api/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: question }),
      signal: controller.signal,
    });
    if (!response.ok) {
      view.fail(await errorDetail(response));
      ended = true;
      return;
    }
    for await (const frame of readFrames(response)) {
      if (frame.type === "delta") view.appendAnswer(frame.text);
      else if (frame.type === "thinking") view.appendThinking(frame.text);
      else if (frame.type === "tool") view.addTool(frame);
      else if (frame.type === "retry") view.showRetry(frame);
      else if (frame.type === "done") {
        view.finish(frame);
        announce(`Answer: ${view.answerText}`);
        ended = true;
      } else if (frame.type === "error") {
        view.fail(frame.detail);
        announce(`Error: ${frame.detail}`);
        ended = true;
      }
    }
    if (!ended) {
      view.fail("The answer was cut off — please try again.");
      ended = true;
    }
  } catch (error) {
    if (controller.signal.aborted) {
      view.stopped();
      announce("Stopped.");
    } else {
      view.fail("The connection to the server failed — please try again.");
    }
  } finally {
    current = null;
    setBusy(false);
    input.focus();
    loadHistory();
  }
}

async function loadHistory() {
  try {
    const response = await fetch("/api/history?limit=20");
    if (!response.ok) return;
    const { turns } = await response.json();
    historyList.replaceChildren(
      ...turns.map((turn) => {
        const item = document.createElement("li");
        const button = document.createElement("button");
        button.type = "button";
        button.className = "history-item";
        button.textContent = turn.question;
        button.title = `${turn.mode}, ${new Date(turn.created_at * 1000).toLocaleString()}`;
        button.addEventListener("click", () => {
          input.value = turn.question;
          input.focus();
        });
        item.append(button);
        return item;
      }),
    );
    historyEmpty.hidden = turns.length > 0;
  } catch {
    // history is a convenience: the chat works without it
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const question = input.value.trim();
  if (!question || current !== null) return;
  input.value = "";
  ask(question);
});

input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    form.requestSubmit();
  }
});

stopButton.addEventListener("click", () => {
  current?.controller.abort();
});

loadHistory();
input.focus();
