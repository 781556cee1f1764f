"""The neutral home for what every server here shares: the mock (`mock_llm/`), the notes app
(`app/`) and the guard proxy (`guard/`) each import it, and it imports none of them.

One module per concept:

- `servekit.limits`: `RequestLimits`, the ASGI middleware that bounds a request's headers,
  target and body before a route sees it;
- `servekit.security_headers`: `SecurityHeaders`, the middleware that puts the security
  headers (each server's own Content-Security-Policy among them) on every response;
- `servekit.listen`: a command line's listening socket (loopback by default, a warning
  otherwise) and its URL;
- `servekit.in_thread`: any ASGI app served by uvicorn in a background thread on a free port;
- `servekit.json_codec`: JSON bytes as the servers write them (`dumps`) and a body read as
  the JSON object it should be (`json_object`);
- `servekit.error_bodies`: OpenAI's and Anthropic's error bodies, which the mock plays and
  the guard proxy answers with;
- `servekit.sse`: an upstream body's server-sent events, read as the openai SDK reads them
  (`SseDecoder`), and a JSON `data:` event written (`json_event`);
- `servekit.ndjson`: an upstream body's NDJSON lines (Ollama's streams);
- `servekit.openai_chunks`: the parts of an OpenAI chat completion or stream chunk, read
  leniently, for the app's model client, the guard proxy and the mock's recorder;
- `servekit.hop_by_hop`: which headers a proxy passes on (RFC 9110's hop-by-hop rule), for
  the guard proxy and the mock's recorder;
- `servekit.pool` and `servekit.httpx_pool`: the pooled connections to an upstream (aiohttp
  for the guard proxy and the app's model client, httpx for the recorder), idle for less
  than the common servers' keep-alive, with the one retry on a fresh connection that a
  server closing a pooled connection calls for;
- `servekit.trigger_grammar`: the mock's trigger grammar, which the mock reads and an app
  that searches its users' text strips (`strip_triggers`).

The dependency rule (tests/unit/project/test_dependency_rule.py): guardrail <- servekit <- mock_llm,
app, guard.
"""
