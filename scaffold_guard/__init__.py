"""scaffold-guard's own namespace: what the distribution ships besides its libraries.

The wheel's top-level packages are the parts people import or run by name (`guardrail`,
the filter; `guard`, the proxy and `guard.transport`; `mock_llm`; `conformance`, the kit;
`servekit`, their shared HTTP plumbing). What a user's own project is likely to name too
lives here, where it cannot collide:

- `scaffold_guard.app`: the reference notes chat (`scaffold-guard app`; `python -m app` in a
  checkout);
- `scaffold_guard.integrations`: the LiteLLM guardrail
  (`scaffold_guard.integrations.litellm_guardrail.ScaffoldGuardrail` in LiteLLM's config)
  and the Open WebUI Filter Function's builder;
- `scaffold_guard.cli`: the `scaffold-guard` command, one subcommand per part.

Importing this package loads nothing else.
"""
