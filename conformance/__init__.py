"""The guardrail conformance kit: checks any chat web app wired to mock_llm against the contract.

Run it from a checkout with `pytest conformance` (the kit starts the mock and the reference
app), or against your own app with `pytest conformance --app-url URL --mock-url URL`
(`pytest --pyargs conformance ...` once the wheel is installed). docs/conformance.md has
the options, the profile format and a walk-through for a third-party app.
"""
