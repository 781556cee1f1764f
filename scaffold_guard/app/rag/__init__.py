"""Retrieval, the agent, its tools, and the scaffolding guardrail."""
