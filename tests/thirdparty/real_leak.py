"""The conversation that makes a real small model write its tool-call markup into the answer.

The incident our README opens with, reproduced with a real model instead of a script: a
system prompt in the style of a tool-using chat template (LFM2's tool list), one earlier
turn whose answer was a call in LFM2's syntax, and a new question, with no tools offered.
SmolLM2-135M-Instruct, greedy from a fixed seed through llama.cpp's llama-server, copies
the call syntax into its answer, a token per chunk (`<`, `|`, `tool`, `_`, `call`, ...).
tests/thirdparty/test_llama_server.py sends it through the guard; the recording of it
(tests/fixtures/cases/smollm2-llama-server.yaml, `scripts/record_real_leak.py`) is a case
the kit checks in the gate.
"""

from __future__ import annotations

FLOW = "smollm2-llama-server-leak"
"""The recorded case's flow name (its trigger is `[[mock:FLOW]]`)."""
CANARY = "read(path="
"""What the recorded call carries that must never show."""
LEAK_TEXT = "<|tool_call_start|>"
"""What the model's answer holds: the start of LFM2's call markup."""
TOOLS = (
    '[{"name": "read", "description": "Read a note from the homelab notes folder.",'
    ' "parameters": {"type": "object", "properties": {"path": {"type": "string"}},'
    ' "required": ["path"]}}]'
)
SYSTEM = (
    "You are a helpful assistant for the user's homelab notes.\n"
    f"List of tools: <|tool_list_start|>{TOOLS}<|tool_list_end|>"
)
CALL = "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>"
LEAK_MESSAGES = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What do my notes say about backups?"},
    {"role": "assistant", "content": CALL},
    {"role": "user", "content": "When do the backups run?"},
]
"""No tools in the request: only the prompt shows the model a call."""
CLEAN_QUESTION = "What is the capital of France? Answer in one short sentence."
THINKING_SERVER_ARGS = ("--jinja", "--reasoning-format", "deepseek", "--chat-template-file")
"""llama-server splitting the model's reasoning into `reasoning_content`, given a template
that marks it (tests/thirdparty/templates/think_tags.jinja) as the last argument."""
REASONED_ANSWER = "Your notes say the backups run nightly."
REASONED_LEAK_MESSAGES = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What do my notes say about backups?"},
    {"role": "assistant", "content": REASONED_ANSWER, "reasoning_content": CALL},
    {"role": "user", "content": "When do the backups run?"},
]
"""An earlier turn whose reasoning was the call: through the thinking server the model writes
its call markup into its reasoning (`reasoning_content`, which the guard never filters: G9)
and a plain answer after `</think>`."""
