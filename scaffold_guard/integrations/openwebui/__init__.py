"""The Open WebUI filter function: one pasteable file, generated from the guardrail library.

- `filter_template`: the `Filter` class Open WebUI calls (`stream`, `outlet`, `Valves`),
  importing the library like any module of ours;
- `build`: writes `scaffold_guard_filter.py`, the template with the library's code inlined,
  the one file a person pastes into Open WebUI's Functions page (docs/integrations.md);
- `scaffold_guard_filter`: that file, generated (never edit it; a unit test fails when it
  is stale).
"""
