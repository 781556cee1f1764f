// Remembers each error element's text as the question is sent: an error the page still
// shows from before (a banner, a toast) is not the new turn's, unless its text changes.
els => {
  window.__sgKitErrorsBefore = new Map(els.map((e) => [e, (e.textContent || "").trim()]));
}
