// Asks the recorder (recorder.js) to report the first sighting of each of `n`.
n => window.__sgKit && window.__sgKit.watch(n)
