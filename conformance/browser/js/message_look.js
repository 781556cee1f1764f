// The turn's own message for turn_error.js (the one element of its locator, if it shows).
(els) => {
  if (window.__sgKitTurnLook) window.__sgKitTurnLook.mine = els[0] ?? null;
}
