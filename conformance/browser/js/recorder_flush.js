// Hands everything the recorder (recorder.js) has over to the kit; resolves once it has it.
() => window.__sgKit && window.__sgKit.flush()
