// The turn's visible error text ('' for none), or null when the page redrew between looks:
// over every message shown, with the errors and the turn's message error_look.js and
// message_look.js kept.
(msgs, strict) => {
  const look = window.__sgKitTurnLook;
  if (!look) return null;  // the document changed between the kit's looks: look again
  const { errs, mine } = look;
  if (strict && [...errs, ...msgs, ...(mine ? [mine] : [])].some((e) => !e.isConnected)) {
    return null;  // redrawn between the kit's looks: look again
  }
  const visible = (e) => {
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(e).visibility !== "hidden";
  };
  const before = window.__sgKitErrorsBefore;
  const stale = (e) => before !== undefined && before.get(e) === (e.textContent || "").trim();
  const ours = (e) => (mine !== null && mine.contains(e)) || (!stale(e)
    && !msgs.some((m) => m !== mine && m.contains(e)));
  const texts = errs.filter((e) => ours(e) && visible(e))
    .map((e) => (e.textContent || "").trim()).filter(Boolean);
  return texts.length ? texts[texts.length - 1] : "";
}
