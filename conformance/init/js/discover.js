// The page side of `python -m conformance init`: finds a chat page's parts by what they do,
// and names each with a CSS selector a profile can keep. Evaluated once per document; the
// kit calls window.__sgInit's functions with element handles it got from earlier calls.
//
// A selector is built from what a page's authors chose and keep stable (test ids, ids that
// do not look generated, ARIA labels, names, placeholders, roles, class names that do not
// look generated), never from positions, and is checked against the page before use.
(() => {
  if (window.__sgInit) return;

  const norm = (text) => (text ?? "").replace(/\s+/g, " ").trim();
  const visible = (el) => {
    if (!(el instanceof Element)) return false;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    return box.width > 0 && box.height > 0 && style.visibility !== "hidden" &&
      style.display !== "none";
  };
  // Names a build tool made up (hashes: digits, or capitals mid-word), which change with a
  // release of the page.
  const GENERATED = /\d{3,}|^css-|^sc-|^jsx-|^svelte-|__[A-Za-z0-9]{5,}$|^[a-z]{1,3}-(?=[a-z0-9]*[0-9A-Z])[A-Za-z0-9]{5,}$|[:[\]]/;
  const quote = (value) => `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
  const TEST_IDS = ["data-testid", "data-test", "data-qa", "data-cy"];
  const LABELS = ["aria-label", "name", "placeholder", "title", "role"];

  // Selectors for `el` from its own attributes, most stable first (unchecked).
  const own = (el) => {
    const tag = el.tagName.toLowerCase();
    const out = [];
    for (const name of TEST_IDS) {
      const value = el.getAttribute(name);
      if (value) out.push(`[${name}=${quote(value)}]`);
    }
    if (el.id && !GENERATED.test(el.id) && /^[A-Za-z][\w-]*$/.test(el.id)) out.push(`#${el.id}`);
    for (const name of LABELS) {
      const value = el.getAttribute(name);
      if (value && value.length <= 60) out.push(`${tag}[${name}=${quote(value)}]`);
    }
    for (const attr of el.attributes) {
      if (attr.name.startsWith("data-") && !TEST_IDS.includes(attr.name) && attr.value &&
          attr.value.length <= 40 && !GENERATED.test(attr.value)) {
        out.push(`${tag}[${attr.name}=${quote(attr.value)}]`);
      }
    }
    const classes = [...el.classList].filter((c) => !GENERATED.test(c)).map(CSS.escape);
    for (const c of classes) out.push(`${tag}.${c}`);
    for (let i = 0; i < classes.length; i++) {
      for (let j = i + 1; j < classes.length; j++) out.push(`${tag}.${classes[i]}.${classes[j]}`);
    }
    if (el.isContentEditable && el.getAttribute("contenteditable") !== null) {
      out.push(`${tag}[contenteditable]`);
    }
    out.push(tag);
    return out;
  };
  const all = (selector, root = document) => {
    try { return [...root.querySelectorAll(selector)]; } catch { return null; }
  };

  // A selector that finds exactly `el` in the page.
  const unique = (el) => {
    for (const selector of own(el)) {
      const found = all(selector);
      if (found && found.length === 1 && found[0] === el) return selector;
    }
    for (const selector of own(el)) {  // the first match is enough for a page's one control
      const found = all(selector);
      if (found && found[0] === el) return selector;
    }
    return null;
  };

  const TEXT_BOX = "textarea, input:not([type]), input[type=text], input[type=search]," +
    " [contenteditable=''], [contenteditable=true], [role=textbox]";
  const composer = () => {
    const score = (el) => {
      let points = el.tagName === "TEXTAREA" || el.isContentEditable ? 2 : 0;
      const words = `${el.getAttribute("placeholder") ?? ""} ${el.getAttribute("aria-label") ?? ""}`;
      if (/message|ask|chat|prompt|question|type|send|write/i.test(words)) points += 3;
      if (el.getBoundingClientRect().top > innerHeight / 2) points += 1;
      return points;
    };
    const boxes = [...document.querySelectorAll(TEXT_BOX)]
      .filter((el) => visible(el) && !el.disabled && !el.readOnly)
      .filter((el) => !el.parentElement?.closest("[contenteditable=''], [contenteditable=true]"));
    boxes.sort((a, b) => score(b) - score(a));
    return boxes[0] ?? null;
  };

  const BUTTONS = "button, [role=button], input[type=submit]";
  const buttonWords = (el) =>
    `${el.getAttribute("aria-label") ?? ""} ${el.getAttribute("title") ?? ""} ${norm(el.textContent)} ${el.value ?? ""}`;
  const sendButton = (box) => {
    const form = box.closest("form");
    const near = box.getBoundingClientRect();
    const distance = (el) => {
      const r = el.getBoundingClientRect();
      return Math.hypot(r.left - near.right, r.top - near.top);
    };
    const buttons = [...document.querySelectorAll(BUTTONS)]
      .filter((el) => visible(el) && !el.disabled);
    const named = buttons.filter((el) => /send|submit|ask|↑|➤|→/i.test(buttonWords(el)));
    const inForm = form ? buttons.filter((el) => form.contains(el) && el.type === "submit") : [];
    const pick = [...named, ...inForm].sort((a, b) => distance(a) - distance(b));
    return pick[0] ?? null;
  };

  // Seen by a person: some size, and not clipped away (a screen reader's live region).
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    return visible(el) && box.width > 2 && box.height > 2 &&
      getComputedStyle(el).clip !== "rect(0px, 0px, 0px, 0px)";
  };
  const depth = (el) => { let n = 0; for (let e = el; e; e = e.parentElement) n++; return n; };
  const common = (a, b) => { let e = a; while (e && !e.contains(b)) e = e.parentElement; return e; };

  // The deepest shown element whose text holds `needle` (whitespace folded), the composer
  // and code aside; of several, the one nearest `near`, else the last in the page.
  const holding = (needle, root, near) => {
    const want = norm(needle);
    const found = [];
    const walk = (el) => {
      if (el.matches("script, style, noscript, template, title, textarea, input") ||
          el.isContentEditable || !norm(el.textContent).includes(want)) return false;
      let deeper = false;
      for (const child of el.children) deeper = walk(child) || deeper;
      if (!deeper && shown(el)) found.push(el);
      return deeper || shown(el);
    };
    walk(root ?? document.body);
    if (near) found.sort((a, b) => depth(common(a, near)) - depth(common(b, near)));
    return found[found.length - 1] ?? null;
  };

  // The children of the lowest common ancestor of `a` and `b` on the way to each.
  const siblings = (a, b) => {
    let top = a;
    while (top.parentElement && !top.parentElement.contains(b)) top = top.parentElement;
    let other = b;
    while (other.parentElement && other.parentElement !== top.parentElement) {
      other = other.parentElement;
    }
    return [top, other];
  };

  // Whether `el` is inside `outer`: an error display in the turn's message, or outside it.
  const inside = (outer, el) => outer.contains(el);

  // A selector that finds `el` and may find its like elsewhere (no id): an error display.
  const general = (el) => own(el).filter((s) => !s.startsWith("#"))
    .find((selector) => (all(selector) ?? []).includes(el)) ?? null;

  const STATE = /\[data-(?!testid=|test=|qa=|cy=)[\w-]+=/;
  // A selector for the turn's message: it finds `message`, not `user`, nothing around
  // `message`, and no other element holding text.
  const messageSelector = (message, user, answerSelector) => {
    const ok = (selector) => {
      const found = all(selector);
      return found && found.includes(message) && !found.includes(user) &&
        !found.some((el) => el !== message && (el.contains(message) || message.contains(el))) &&
        found.filter((el) => norm(el.textContent)).length === 1;
    };
    // A data attribute's value (not a test id) last: it is often the message's state
    // (data-phase="finished"), which a streaming message does not have yet.
    const stateless = own(message).sort((a, b) => STATE.test(a) - STATE.test(b));
    const tried = [...stateless];
    if (answerSelector) tried.push(...stateless.map((s) => `${s}:has(${answerSelector})`));
    return tried.find(ok) ?? null;
  };

  // A selector, relative to `message`, whose first match there is `part` or an element
  // around it with no other text (so it reads exactly the same text).
  const within = (message, part) => {
    const text = norm(part.textContent);
    for (let el = part; el && message.contains(el); el = el.parentElement) {
      if (norm(el.textContent) !== text) break;
      if (el === message) return ":scope";
      const selector = own(el).find((s) => (all(s, message) ?? [])[0] === el);
      if (selector) return selector;
    }
    return null;
  };

  // Attributes, and the selectors of visible buttons inside, of a message now.
  const snapshot = (message) => ({
    attributes: Object.fromEntries([...message.attributes].map((a) => [a.name, a.value])),
    buttons: [...message.querySelectorAll(BUTTONS)].filter(visible)
      .map((el) => within(message, el)).filter(Boolean),
  });

  // Buttons a person can press now: shown and enabled.
  const pressable = () => [...document.querySelectorAll(BUTTONS)]
    .filter((el) => visible(el) && !el.disabled && el.getAttribute("aria-disabled") !== "true");
  let seen = new WeakSet();
  const markButtons = () => { seen = new WeakSet(pressable()); };
  // A button that could not be pressed before (absent, hidden or disabled) and says stop.
  const newStop = () => {
    const fresh = pressable().filter((el) => !seen.has(el));
    return fresh.find((el) => /stop|cancel|abort|■|⏹/i.test(buttonWords(el))) ?? null;
  };

  // A modal in the way: an open <dialog> or [role=dialog] with a button to close it.
  const blocking = () => {
    const dialogs = [...document.querySelectorAll("dialog[open], [role=dialog], [aria-modal=true]")]
      .filter(visible);
    for (const dialog of dialogs) {
      const button = [...dialog.querySelectorAll(BUTTONS)].find(visible);
      if (button) return button;
    }
    return null;
  };
  // A visible <select> with nothing chosen and an option to choose: [selector, option].
  const unchosen = () => {
    for (const select of document.querySelectorAll("select")) {
      if (!visible(select) || select.value) continue;
      const option = [...select.options].find((o) => o.value && !o.disabled);
      if (option) return [select, option.value];
    }
    return null;
  };

  window.__sgInit = {
    norm, unique, general, inside, composer, sendButton, holding, siblings, messageSelector,
    within, snapshot, markButtons, newStop, blocking, unchosen,
  };
})();
