// Calls the function `name` of init's page side (discover.js, window.__sgInit) with `args`,
// element handles among them; its value.
([name, args]) => window.__sgInit[name](...args)
