"""The one recovery as the guardrail's front doors' integration tests check it (the guard
proxy's chat, Responses and Ollama routes, the LiteLLM guardrail).

- `assert_chat_recovery`: the recovery request of a chat-messages API is the first
  request's messages with the correction in its system message and no tools (G2).
- `RECOVERY_FAULTS` (`RECOVERY_REFUSED`, `RECOVERY_CUT`): runtime flows whose first answer
  is nothing but markup and whose recovery the upstream refuses (a 503) or cuts after two
  chunks; `add_flows` adds flows to the mock, as a module fixture does once.
- `SYSTEM`: the system message these tests' turns send, which the recovery must keep.
"""

from __future__ import annotations

from typing import Any

import httpx

from guardrail.policy import CORRECTION_INSTRUCTION

from ...support.deadlines import DEADLINE_S
from ...support.journal import Entry

SYSTEM = "You answer from the user's homelab notes."
MARKUP = "<|tool_call_start|>[read(path='/homelab/x.md')]<|tool_call_end|>"
RECOVERY_REFUSED = "guard-recovery-503"
RECOVERY_CUT = "guard-recovery-cut"
RECOVERY_FAULTS: dict[str, Any] = {
    RECOVERY_REFUSED: {"steps": [{"content": MARKUP}, {"fault": {"kind": "http", "status": 503}}]},
    RECOVERY_CUT: {
        "steps": [
            {"content": MARKUP},
            {
                "content": "Backups run nightly at 02:00.",
                "fault": {"kind": "cut", "after_chunks": 2},
            },
        ]
    },
}


def add_flows(mock_url: str, flows: dict[str, Any]) -> None:
    """Add `flows` to the mock at `mock_url` (flows already there, unchanged, stay)."""
    added = httpx.post(f"{mock_url}/_mock/flows", json={"flows": flows}, timeout=DEADLINE_S)
    assert added.status_code == 200, added.text


def assert_chat_recovery(entries: list[Entry], system: str) -> None:
    """The turn's second request (`entries[1]`) is its recovery: no tools, the first
    request's messages, the correction after its system message `system` (G2)."""
    recovery = entries[1].body
    assert "tools" not in recovery
    assert recovery["messages"][0] == {
        "role": "system",
        "content": f"{system}\n\n{CORRECTION_INSTRUCTION}",
    }
    assert recovery["messages"][1:] == entries[0].body["messages"][1:]
