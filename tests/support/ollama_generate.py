"""Ollama's /api/chat answers as /api/generate writes them, for tests of the generate route.

The mock speaks /api/chat only; a generate answer is the same object with the message's
text as `response` and its thinking as `thinking` (no tool calls: generate has none)."""

from __future__ import annotations

import json
from typing import Any


def as_generate(answer: dict[str, Any]) -> dict[str, Any]:
    """A chat line or whole answer as generate's; anything without a message as it is."""
    message = answer.get("message")
    if not isinstance(message, dict):
        return answer
    out = {k: v for k, v in answer.items() if k not in ("message", "done")}
    out["response"] = message.get("content", "")
    if "thinking" in message:
        out["thinking"] = message["thinking"]
    if "done" in answer:
        out["done"] = answer["done"]
    return out


def as_generate_line(raw: bytes) -> bytes:
    return json.dumps(as_generate(json.loads(raw)), separators=(",", ":")).encode() + b"\n"
