"""Adapters that put the guardrail where users already run their chat: thin layers over
`guardrail/`, never a second copy of the filter or the recovery policy.

- `scaffold_guard.integrations.openwebui`: an Open WebUI Filter Function (one pasteable file,
generated
  from the library);
- `scaffold_guard.integrations.litellm_guardrail`: a LiteLLM proxy custom guardrail.

The guard proxy (`guard/`) is the third route: a server in front of the model server.
"""
