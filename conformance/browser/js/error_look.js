// The first look at a turn's error: keeps the error elements (and the turn's message, set by
// message_look.js) for turn_error.js, and returns how many there are (0: no error at all).
(errs) => {
  window.__sgKitTurnLook = { errs, mine: null };
  return errs.length;
}
