// Turn model text into safe DOM: markdown through marked, then DOMPurify.
//
// Deliberate choices:
// - Raw HTML in the model's markdown is shown as text, never interpreted (marked's html
//   renderer escapes it); DOMPurify then sanitizes what marked produced, as a second wall.
// - Images are never fetched, nor linked: an image shows as its alt text, marked as an image
//   ("[image: status badge]"), so a model cannot make the page load or offer a tracking URL.
// - Links keep only http:, https: and mailto: targets (javascript:, data:, vbscript: and
//   anything else lose their href) and open in a new tab without a referrer.
import { Marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";

const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

function escapeHtml(text) {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

const marked = new Marked({
  gfm: true,
  renderer: {
    html(token) {
      return escapeHtml(token.text);
    },
    image(token) {
      const label = escapeHtml(token.text || "no description");
      return `<span class="image-alt">[image: ${label}]</span>`;
    },
  },
});

export function safeHref(href, base = window.location.href) {
  try {
    const url = new URL(href, base);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName !== "A") return;
  const href = node.getAttribute("href");
  const safe = href === null ? null : safeHref(href);
  if (safe === null) {
    node.removeAttribute("href");
  } else {
    node.setAttribute("href", safe);
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["img", "style", "iframe", "frame", "object", "embed", "form", "input",
    "button", "svg", "math", "video", "audio", "source", "link", "meta", "base"],
  FORBID_ATTR: ["style", "srcset", "src", "action", "formaction", "background", "poster"],
};

/** @param {string} text markdown from the model @returns {DocumentFragment} */
export function renderMarkdown(text) {
  return DOMPurify.sanitize(marked.parse(text, { async: false }), PURIFY);
}
