// The embedded demo's banner: shown only when GET /api/info says the model is the mock.
//
// Each example button sends its question with `[[mock:FLOW#KEY]]` and a fresh KEY, so
// clicking it again replays the flow from its first step (a keyless trigger typed twice
// could continue the earlier turn; docs/mock_llm.md). A turn whose question carries a KEY
// links to the mock's journal filtered to that KEY, to see what the app really asked.
import { randomId } from "./ids.js";

const KEYED_TRIGGER = /\[\[mock:[A-Za-z0-9_-]+#([A-Za-z0-9_-]+)\]\]/;

/**
 * Show the banner if the app's model is the embedded mock.
 * @param {{banner: Element, examples: Element, journal: HTMLAnchorElement,
 *          ask: (question: string) => void}} parts
 * @returns {Promise<{journalLink: (question: string) => object | null}>}
 */
export async function demoBanner({ banner, examples, journal, ask }) {
  const none = { journalLink: () => null };
  let info;
  try {
    const response = await fetch("/api/info");
    if (!response.ok) return none;
    info = await response.json();
  } catch {
    return none;
  }
  const demo = info.demo;
  if (!demo) return none;
  journal.href = demo.journal_url;
  examples.replaceChildren(
    ...demo.examples.map((example) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "example";
      button.dataset.testid = "demo-example";
      button.dataset.flow = example.flow;
      button.textContent = example.label;
      button.addEventListener("click", () => {
        ask(`${example.question} [[mock:${example.flow}#${randomId("demo-", 4)}]]`);
      });
      item.append(button);
      return item;
    }),
  );
  banner.hidden = false;
  return {
    journalLink(question) {
      const key = KEYED_TRIGGER.exec(question)?.[1];
      if (!key) return null;
      const href = `${demo.journal_url}?${new URLSearchParams({ key })}`;
      return { href, text: "this turn in the mock's journal", testid: "turn-journal" };
    },
  };
}
