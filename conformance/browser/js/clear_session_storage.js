// Empties the current document's tab storage, if it has any (about:blank has none).
() => { try { sessionStorage.clear(); } catch { /* about:blank */ } }
