"""The neutral home for the HTTP plumbing every server and client here shares.

The guard proxy (`guard/`), the notes app (`app/`) and the mock's recorder (`mock_llm/`)
each reach an upstream server over HTTP; what they do the same way lives here, so none of
them imports another and the guardrail library (`guardrail/`) stays pure (no I/O). This
package imports nothing of ours.

- `sg_http.pool`: the pooled aiohttp connections to an upstream, with an idle time shorter
  than the common servers' keep-alive and the one retry on a fresh connection that a
  server closing a pooled connection calls for (issue 29).
- `sg_http.httpx_pool`: the same for an httpx client (the recorder's).
"""
