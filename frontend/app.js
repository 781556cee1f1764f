// The chat page's controller: send a question, stream the turn's frames into an assistant
// message, keep the conversation in view.
//
// Frames (see docs/architecture.md): start, thinking, tool, retry (a transport retry, or
// reason "recovery": the guardrail's one recovery request), delta, then done or error. The
// assistant message carries data-state="streaming" | "done" | "error"; tests and the
// conformance kit rely on that and on the data-testid hooks in index.html.
import { demoBanner } from "./demo.js";
import { existingSessionId, recentQuestions, restoreConversation, sessionId } from "./history.js";
import { follower } from "./scroll.js";
import { readFrames } from "./stream.js";
import { assistantView, userMessage } from "./view.js";

const $ = (selector) => document.querySelector(selector);

const form = $("[data-testid=chat-form]");
const input = $("[data-testid=chat-input]");
const sendButton = $("[data-testid=chat-send]");
const stopButton = $("[data-testid=chat-stop]");
const log = $("[data-testid=chat-log]");
const announcer = $("[data-testid=announcer]");
const historyToggle = $("[data-testid=history-toggle]");
const follow = follower(log);
const recent = recentQuestions({
  list: $("[data-testid=history]"),
  empty: $("[data-testid=history-empty]"),
  dialog: $("[data-testid=past-turn]"),
  askAgain(question) {
    input.value = question; // in the box, to edit or send
    input.focus();
  },
});
let demo = { journalLink: () => null };

let current = null; // the turn being streamed: {controller, view}

function setBusy(busy) {
  sendButton.disabled = busy;
  stopButton.disabled = !busy;
  form.setAttribute("aria-busy", String(busy));
  for (const button of document.querySelectorAll("[data-testid=demo-example]")) {
    button.disabled = busy;
  }
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
  const view = assistantView(() => follow.grew());
  log.append(userMessage(question), view.root);
  const link = demo.journalLink(question);
  if (link) view.setMeta("", link);
  follow.jumpToEnd();
  const controller = new AbortController();
  current = { controller, view };
  setBusy(true);
  let ended = false;
  try {
    const response = await fetch("/api/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: question, session: sessionId() }),
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
        view.fail(frame.detail, frame.upstream);
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
    recent.refresh();
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

historyToggle.addEventListener("click", () => {
  const open = historyToggle.getAttribute("aria-expanded") !== "true";
  historyToggle.setAttribute("aria-expanded", String(open));
  document.body.classList.toggle("history-open", open);
});

async function start() {
  const banner = demoBanner({
    banner: $("[data-testid=demo-banner]"),
    examples: $("[data-testid=demo-examples]"),
    journal: $("[data-testid=demo-journal]"),
    ask,
  });
  const session = existingSessionId();
  if (session !== null) {
    input.disabled = true; // until this tab's earlier turns are back above it
    await restoreConversation(log, session);
    follow.jumpToEnd();
    input.disabled = false;
  }
  input.focus();
  recent.refresh();
  demo = await banner;
}

start();
