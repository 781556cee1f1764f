// Remembers the assistant messages the page shows as the question is sent (`[turn] find =
// "last"`: the turn's message is one not among them) and counts them (`count`).
els => { window.__sgKitShownBefore = new WeakSet(els); return els.length; }
