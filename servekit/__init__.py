"""The neutral home for what every server here shares: the mock (`mock_llm/`), the notes app
(`scaffold_guard/app/`) and the guard proxy (`guard/`) each import it, and it imports none of them.

One module per concept: `limits` (request bounds), `request_body` (a body read whole
within bounds), `security_headers`, `listen` (the listening socket), `in_thread` (an app
served in a thread), `json_codec`, `error_bodies` (OpenAI's and Anthropic's), `sse`,
`ndjson`, `openai_chunks` (chunks read leniently), `hop_by_hop`, `pool` and `httpx_pool`
(upstream connections with the one stale-connection retry), `streamed` (a streamed answer
without a task group), `workers` (N processes on one socket), and `trigger_grammar` (the
mock's trigger grammar, `strip_triggers`).

The dependency rule (tests/unit/project/test_dependency_rule.py): guardrail <- servekit <- mock_llm,
app, guard.
"""
