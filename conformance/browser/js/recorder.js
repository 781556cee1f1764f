// The kit's DOM recorder. Installed with Playwright's add_init_script, so it runs in every
// frame after the document is created and before any of the page's own scripts.
//
// It reports, through the binding the kit exposes (window.__sgKitRecord), everything the
// page ever shows: each inserted or removed node (elements as their markup, text nodes as
// their text), each text change with its old value, each attribute change with its old
// value, and after every batch the whole text of each observed root (so a marker split
// across elements is caught too). Shadow roots are observed as they are attached, open or
// closed (attachShadow is wrapped before the page can call it). Reports sent before the
// binding is available are buffered; flush() hands them all over and resolves once the
// kit has them. Every report carries this document's id, so a page reused for the next test
// can tell a late report of the document it left from the new one's. Strings given to
// watch() (the markup's markers) are looked for in every whole text, and in every node and
// old text a batch reports (a string the page showed and took away again within one batch
// of changes, as two stream frames handled in one task do, is in no whole text): the first
// sighting of each is reported at once through window.__sgKitSighted, so the kit can take
// the page's screenshot while the string may still be on it; flush() resolves once the kit
// has taken it.
(() => {
  if (window.__sgKit) return;
  const id = `${performance.timeOrigin}-${Math.random().toString(36).slice(2)}`;
  const pending = [];
  let sending = Promise.resolve();
  const roots = new Set();
  let watched = [];
  if (typeof window.__sgKitWatched === "function") {
    window.__sgKitWatched().then((needles) => { watched = needles; });
  }
  const sighted = new Set();
  const look = (text) => {
    for (const needle of watched) {
      if (sighted.has(needle) || !text.includes(needle)) continue;
      sighted.add(needle);
      if (typeof window.__sgKitSighted === "function") {
        // Called at once (its screenshot should show the page now); flush() waits for it.
        const told = window.__sgKitSighted(id, needle, performance.now());
        sending = sending.then(() => told).catch(() => undefined);  // a closing page: go on
      }
    }
  };

  // Code is not content: script and style text is never what a page shows.
  const CODE = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"]);
  const isCode = (node) => node.nodeType === Node.ELEMENT_NODE && CODE.has(node.nodeName);
  // An element as its markup and its text: the markup escapes a `<` in the text, and an
  // element added and removed within one batch is in no whole text.
  const describe = (node) => {
    if (isCode(node)) return "";
    if (node.nodeType === Node.ELEMENT_NODE) return `${node.outerHTML}\n${node.textContent}`;
    return isCode(node.parentNode ?? document) ? "" : (node.textContent ?? "");
  };

  const send = () => {
    if (pending.length === 0 || typeof window.__sgKitRecord !== "function") return sending;
    const batch = pending.splice(0, pending.length).join("\n");
    sending = sending.then(() => window.__sgKitRecord(id, batch));
    return sending;
  };

  // The text of a root as one string (a marker split across elements shows whole here).
  const wholeText = (root) => {
    const parts = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!isCode(node.parentNode)) parts.push(node.textContent);
    }
    return parts.join("");
  };

  let lastChange = performance.now();
  const handle = (records) => {
    if (records.length) lastChange = performance.now();
    const touched = new Set();
    for (const record of records) {
      touched.add(record.target.getRootNode());
      if (record.type === "childList") {
        for (const node of [...record.addedNodes, ...record.removedNodes]) {
          const text = describe(node);
          pending.push(text);
          if (text) look(text);  // maybe shown and gone within this batch
        }
      } else if (record.type === "characterData") {
        if (isCode(record.target.parentNode)) continue;
        const old = record.oldValue ?? "";
        pending.push(old, record.target.textContent ?? "");
        look(old);
      } else {
        const value = record.target.getAttribute(record.attributeName);
        pending.push(record.oldValue ?? "", value ?? "");
      }
    }
    for (const root of touched) {
      const text = wholeText(root);
      pending.push(text);
      look(text);
    }
    send();
  };

  const options = {
    childList: true,
    subtree: true,
    characterData: true,
    characterDataOldValue: true,
    attributes: true,
    attributeOldValue: true,
  };
  const observer = new MutationObserver(handle);
  const observe = (root) => {
    if (roots.has(root)) return;
    roots.add(root);
    observer.observe(root, options);
  };
  observe(document);

  const attachShadow = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attachShadow.call(this, init);
    observe(root);
    return root;
  };

  window.__sgKit = {
    id,
    quietFor: () => performance.now() - lastChange,
    watch(needles) {
      watched = needles.filter((needle) => typeof needle === "string" && needle);
    },
    flush() {
      handle(observer.takeRecords());
      for (const root of roots) pending.push(wholeText(root));
      return send();
    },
  };
})();
