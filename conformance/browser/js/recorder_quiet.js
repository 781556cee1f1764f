// Whether the page's DOM has not changed for `quiet` ms, as the recorder (recorder.js) saw.
quiet => window.__sgKit.quietFor() >= quiet
