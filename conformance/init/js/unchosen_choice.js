// A picker that has nothing chosen (discover.js, unchosen), as its selector and the option
// to pick, or null when there is none.
() => { const u = window.__sgInit.unchosen(); return u && [window.__sgInit.unique(u[0]), u[1]]; }
