// Resolves at the page's next DOM change, or after `cap` ms.
cap => new Promise(resolve => {
  const done = () => { observer.disconnect(); clearTimeout(timer); resolve(); };
  const observer = new MutationObserver(done);
  const timer = setTimeout(done, cap);
  observer.observe(document, {subtree: true, childList: true, characterData: true,
                              attributes: true});
})
