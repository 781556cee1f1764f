// The page's localStorage value under `name` (null when it has none): a set-up step's
// `{local_storage:KEY}` placeholder.
name => window.localStorage.getItem(name)
