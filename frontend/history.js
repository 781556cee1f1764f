// Past turns: this tab's conversation after a reload, the "Recent questions" list, and the
// dialog that shows a past question with its answer.
//
// Deliberate choices:
// - The conversation is per tab: an id kept in sessionStorage goes with each question, and
//   a reload asks the server for that tab's turns (GET /api/history?session=ID). A new tab
//   starts an empty conversation; the list still shows every recent question.
// - Only completed turns come back (the server stores no row for a failed or stopped turn).
// - A tab with a conversation (a reload) gets its turns back before the question box is
//   usable, so a question asked right after the page opens always lands below them; a new
//   tab has nothing to fetch and its box is usable at once.
import { randomId } from "./ids.js";
import { askedAt, storedView, userMessage } from "./view.js";

const SESSION_KEY = "sg-session";
const RESTORE_LIMIT = 50;
const LIST_LIMIT = 20;

/** This tab's conversation id if it has one already (a reload), else null. */
export function existingSessionId() {
  const id = sessionStorage.getItem(SESSION_KEY);
  return id && /^[A-Za-z0-9_-]{8,64}$/.test(id) ? id : null;
}

/** This tab's conversation id, made on first use (letters, digits and `-`). */
export function sessionId() {
  let id = existingSessionId();
  if (id === null) {
    id = randomId("tab-", 16);
    sessionStorage.setItem(SESSION_KEY, id);
  }
  return id;
}

async function turns(params) {
  const response = await fetch(`/api/history?${new URLSearchParams(params)}`);
  if (!response.ok) throw new Error(`history: HTTP ${response.status}`);
  return (await response.json()).turns;
}

/** Put the earlier turns of conversation `session` back into `log`, oldest first. */
export async function restoreConversation(log, session) {
  try {
    const earlier = await turns({ limit: RESTORE_LIMIT, session });
    for (const turn of earlier.reverse()) {
      log.append(userMessage(turn.question), storedView(turn).root);
    }
  } catch {
    // the conversation is a convenience: the chat works without it
  }
}

/**
 * The "Recent questions" list and its dialog.
 * @param {{list: Element, empty: Element, dialog: HTMLDialogElement,
 *          askAgain: (question: string) => void}} parts
 */
export function recentQuestions({ list, empty, dialog, askAgain }) {
  const dialogParts = {
    when: dialog.querySelector("[data-testid=past-turn-when]"),
    question: dialog.querySelector("[data-testid=past-turn-question]"),
    answer: dialog.querySelector(".past-answer"),
  };
  let shown = null; // the turn the dialog shows
  dialog.querySelector("[data-testid=past-turn-close]").addEventListener("click", () => {
    dialog.close();
  });
  dialog.querySelector("[data-testid=past-turn-ask-again]").addEventListener("click", () => {
    dialog.close();
    if (shown !== null) askAgain(shown.question);
  });

  function open(turn) {
    shown = turn;
    dialogParts.when.textContent = askedAt(turn.created_at);
    dialogParts.question.textContent = turn.question;
    const view = storedView(turn);
    view.root.dataset.testid = "past-turn-message"; // not one of the conversation's answers
    view.root.querySelector(".meta").hidden = true;
    dialogParts.answer.replaceChildren(view.root);
    dialog.showModal();
  }

  function item(turn) {
    const entry = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "history-item";
    button.textContent = turn.question;
    button.title = turn.question;
    button.addEventListener("click", () => open(turn));
    entry.append(button);
    return entry;
  }

  return {
    async refresh() {
      try {
        const recent = await turns({ limit: LIST_LIMIT });
        list.replaceChildren(...recent.map(item));
        empty.hidden = recent.length > 0;
      } catch {
        // the list is a convenience: the chat works without it
      }
    },
  };
}
