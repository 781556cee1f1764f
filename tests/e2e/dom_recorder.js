// Records every change to the page's DOM from before the page's own scripts run: each
// inserted or removed node's text (and, for elements, their markup), each text change with
// its old value, and each attribute change with its old value. Installed with Playwright's
// add_init_script, so nothing the page ever shows, even for a moment, escapes it.
(() => {
  const seen = [];
  const describe = (node) =>
    node.nodeType === Node.ELEMENT_NODE ? node.outerHTML : node.textContent ?? "";
  const handle = (records) => {
    for (const record of records) {
      if (record.type === "childList") {
        for (const node of record.addedNodes) seen.push(describe(node));
        for (const node of record.removedNodes) seen.push(describe(node));
      } else if (record.type === "characterData") {
        seen.push(record.oldValue ?? "", record.target.textContent ?? "");
      } else {
        seen.push(record.oldValue ?? "", record.target.getAttribute(record.attributeName) ?? "");
      }
    }
  };
  const observer = new MutationObserver(handle);
  observer.observe(document, {
    childList: true,
    subtree: true,
    characterData: true,
    characterDataOldValue: true,
    attributes: true,
    attributeOldValue: true,
  });
  window.__sgRecorded = () => {
    handle(observer.takeRecords());
    return seen.join("\n");
  };
})();
