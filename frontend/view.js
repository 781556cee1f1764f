// One assistant message: its DOM (from the page's template) and how a turn's frames update it.
//
// The same view shows a turn live (frame by frame) and again from its stored row (after a
// reload, or in the past-question dialog), so both look alike. Every text from the server
// goes in as text (textContent) except the answer, which is markdown rendered safely.
import { renderMarkdown } from "./render.js";

const $ = (selector, root) => root.querySelector(selector);
const RECOVERY_SEPARATOR = "\n\n— asked again —\n\n";
const template = document.querySelector("#assistant-template");

/** A user's question as a message. */
export function userMessage(text) {
  const article = document.createElement("article");
  article.className = "message user";
  article.dataset.testid = "message-user";
  const p = document.createElement("p");
  p.textContent = text;
  article.append(p);
  return article;
}

/**
 * A new assistant message, not yet in the page.
 * @param {() => void} onChange called after the message's content grew (to follow it)
 */
export function assistantView(onChange = () => {}) {
  const root = template.content.firstElementChild.cloneNode(true);
  const parts = {
    thinking: $(".thinking", root),
    thinkingText: $(".thinking-text", root),
    tools: $(".tools", root),
    retry: $(".retry", root),
    answer: $(".answer", root),
    cut: $(".cut", root),
    error: $(".error", root),
    upstream: $(".upstream", root),
    sources: $(".sources", root),
    status: $(".status", root),
    meta: $(".meta", root),
  };
  let answerText = "";
  let renderQueued = false;
  let recovered = false; // the guardrail's recovery ran: said under the answer when it ends

  function render() {
    renderQueued = false;
    parts.answer.replaceChildren(renderMarkdown(answerText));
    onChange();
  }

  function setState(state) {
    root.dataset.state = state;
    root.setAttribute("aria-busy", "false");
  }

  function showSources(sources) {
    if (sources.length === 0) return;
    const list = $("ul", parts.sources);
    list.replaceChildren(
      ...sources.map((path) => {
        const item = document.createElement("li");
        item.textContent = path;
        return item;
      }),
    );
    parts.sources.hidden = false;
  }

  const view = {
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
      onChange();
    },
    addTool(chip) {
      parts.tools.hidden = false;
      const item = document.createElement("li");
      item.className = chip.ok ? "chip" : "chip refused";
      item.dataset.testid = "tool-call";
      item.dataset.tool = chip.name;
      const where = chip.path ?? argumentSummary(chip.arguments);
      // The model's name and path each in a bidi isolate: a direction control in them
      // (U+202E) must not run on and reorder the rest of the chip, its "(refused)" above all.
      item.append(isolated(chip.name));
      if (where) item.append(" ", isolated(where));
      if (!chip.ok) item.append(" (refused)");
      parts.tools.append(item);
      onChange();
    },
    showRetry(frame) {
      parts.retry.hidden = false;
      if (frame.reason === "recovery") {
        // The guardrail's one recovery: the failed round showed nothing; its thinking stays,
        // and the recovery's thinking starts apart from it.
        recovered = true;
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
      showSources(frame.sources ?? []);
      parts.cut.hidden = frame.finish_reason !== "length";
      if (recovered) {
        parts.status.textContent =
          "The model's first reply was not usable, so it was asked once more: this is its second reply.";
      }
      setState("done");
      onChange();
    },
    fail(detail, upstream) {
      render();
      parts.retry.hidden = true;
      parts.error.hidden = false;
      parts.error.textContent = detail;
      if (upstream) {
        parts.upstream.hidden = false;
        parts.upstream.textContent = `The model service said: ${upstream}`;
      }
      setState("error");
      onChange();
    },
    stopped() {
      render();
      parts.retry.hidden = true;
      parts.status.textContent = "Stopped.";
      root.dataset.stopped = "true";
      setState("done");
    },
    /** A line under the message: when it was asked, and any link (e.g. the mock's journal). */
    setMeta(text, link) {
      parts.meta.hidden = false;
      parts.meta.replaceChildren(text);
      if (link) {
        const anchor = document.createElement("a");
        anchor.href = link.href;
        anchor.textContent = link.text;
        anchor.target = "_blank";
        anchor.rel = "noopener noreferrer";
        anchor.dataset.testid = link.testid;
        parts.meta.append(text ? " · " : "", anchor);
      }
    },
  };
  return view;
}

/** An assistant view filled from a stored turn (GET /api/history), already finished. */
export function storedView(turn) {
  const view = assistantView();
  for (const chip of turn.tools ?? []) view.addTool(chip);
  view.appendAnswer(turn.answer);
  view.finish({ sources: turn.sources, finish_reason: turn.finish_reason });
  view.root.dataset.restored = "true";
  view.setMeta(askedAt(turn.created_at));
  return view;
}

export function askedAt(createdAt) {
  return `Asked ${new Date(createdAt * 1000).toLocaleString()}`;
}

/** Text from the model, as a bidi isolate (`<bdi>`). */
function isolated(text) {
  const element = document.createElement("bdi");
  element.textContent = text;
  return element;
}

function argumentSummary(argumentsText) {
  try {
    const args = JSON.parse(argumentsText);
    return args.path ?? args.pattern ?? "";
  } catch {
    return "";
  }
}
