"""The guard proxy: an OpenAI-compatible server that applies the guardrail to any chat app.

`python -m guard --upstream URL` sits between a chat app and its model server. Chat
completions (streamed or not) come back with their answer text filtered and, when a reply
was nothing but tool-call markup, recovered once (docs/proxy.md); everything else passes
through unchanged. Ollama's native chat API (`/api/chat`, `/api/generate`, NDJSON) is
guarded the same way (`guard.wire.ollama`, `python -m guard --upstream-ollama URL`), and so is
the OpenAI Responses API (`/v1/responses`, typed events; `guard.wire.responses_stream`). The
guardrail itself is the `guardrail` library, shared with the notes app: this package only
adapts it to each wire format.
"""
