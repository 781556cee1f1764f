// Random ids for the page (a tab's conversation, a demo turn's KEY).
//
// crypto.getRandomValues, not crypto.randomUUID: the page may be served over plain HTTP on a
// LAN address, which is not a secure context, and randomUUID exists only in secure ones.

/** `prefix` and `bytes` random bytes in hex, e.g. randomId("tab-", 16). */
export function randomId(prefix, bytes) {
  const values = crypto.getRandomValues(new Uint8Array(bytes));
  return prefix + Array.from(values, (b) => b.toString(16).padStart(2, "0")).join("");
}
