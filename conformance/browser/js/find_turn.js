// The index of the turn's message among the page's messages (-1: none yet), by `[turn]
// find`, how many messages there are, and whether the page shows the question's KEY.
(messages, {find, key, before, users}) => {
  const count = messages.length;
  const byCount = {index: before < count ? before : -1, count, shown: false};
  if (find === "count" || !key) return byCount;
  if (find === "last") {
    const shown = window.__sgKitShownBefore;
    const last = messages[count - 1];
    return {index: last && !(shown && shown.has(last)) ? count - 1 : -1, count, shown: false};
  }
  // after-question: the first message after (or holding) the last place that shows the
  // question's KEY and has a message after it, in the order the page is drawn, across
  // open shadow roots.
  const pattern = new RegExp(
    "(?<![A-Za-z0-9_-])" + key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "(?![A-Za-z0-9_-])");
  const up = (node) => node.parentNode ?? node.host ?? null;
  const path = (node) => { const p = []; for (; node; node = up(node)) p.unshift(node); return p; };
  const order = (a, b) => {  // -1: a is drawn before b, 1: after, 0: one holds the other
    const pa = path(a), pb = path(b);
    let i = 0;
    while (i < pa.length && i < pb.length && pa[i] === pb[i]) i++;
    if (i === pa.length || i === pb.length) return 0;
    if (pa[i] instanceof ShadowRoot) return -1;
    if (pb[i] instanceof ShadowRoot) return 1;
    return pa[i].compareDocumentPosition(pb[i]) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1;
  };
  const anchors = [];
  if (users) {
    if (users.some((user) => !user.isConnected)) return {index: -1, count, shown: false};
    anchors.push(...users.filter((user) => pattern.test(user.textContent || "")));
  } else {
    const CODE = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "TEXTAREA"]);
    const visit = (root) => {
      const show = NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT;
      const walker = document.createTreeWalker(root, show);
      for (let node = walker.currentNode; node; node = walker.nextNode()) {
        if (node.nodeType !== Node.TEXT_NODE) {
          if (node.shadowRoot) visit(node.shadowRoot);
          continue;
        }
        const parent = node.parentElement;  // the composer's own text is not the question shown
        if (parent && (CODE.has(parent.nodeName) || parent.isContentEditable)) continue;
        if (pattern.test(node.data)) anchors.push(node);
      }
    };
    if (document.body) visit(document.body);
  }
  if (!anchors.length) return byCount;
  for (let a = anchors.length - 1; a >= 0; a--) {
    let best = -1;
    for (let i = 0; i < count; i++) {
      if (order(anchors[a], messages[i]) > 0) continue;
      if (best < 0 || order(messages[i], messages[best]) < 0) best = i;
    }
    if (best >= 0) return {index: best, count, shown: true};
  }
  return {index: -1, count, shown: true};
}
