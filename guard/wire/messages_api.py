"""Anthropic's Messages API (`POST /v1/messages`) as the guard proxy reads and writes it. Pure.

Shared by `guard.wire.messages_stream` and `guard.http.messages_route`: `is_tool_use` (G12),
`shows_nothing`, `MessageGuard` (a whole message's text blocks filtered in place),
`recovery_body` (G2) and `error_event` (Anthropic's in-band error).

Deliberate choices:
- Every block that is not `text`, `thinking` or `redacted_thinking` counts as a tool call,
  so a reply with a block the guard does not know is never retried.
- A text block whose only visible text was markup is taken out, not left empty: the API
  refuses an empty text block when the client sends the conversation back. One that
  stripped nothing stays as it came.
- Thinking blocks are never filtered (G9): their signature covers them as they came.
  Reasoning the filter routes out of a text block (gpt-oss's analysis channel written as
  text) becomes a thinking block of its own before it, with an empty signature.
- The correction goes into the top-level `system` (`system_with_correction`), so the model
  never sees a second system prompt; `tools` and `tool_choice` are removed, the rest sent
  as it came.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guard.wire.reply import WholeReply
from guard.wire.responses_api import event_bytes
from guardrail.json_shapes import as_object, is_array, is_object, string_field
from guardrail.policy import RoundFilter, system_with_correction
from servekit.error_bodies import anthropic_error_body

__all__ = [
    "MessageGuard",
    "error_event",
    "is_tool_use",
    "recovery_body",
    "shows_nothing",
    "text_of",
]

TOOL_FIELDS = ("tools", "tool_choice")
ANSWER_BLOCKS = ("text", "thinking", "redacted_thinking")


def is_tool_use(block: object) -> bool:
    """Whether a content block is a tool call (anything but text and thinking)."""
    return (as_object(block) or {}).get("type") not in ANSWER_BLOCKS


def text_of(block: object) -> str | None:
    """A `text` block's text (None: not a text block, or no text in it)."""
    if not is_object(block) or block.get("type") != "text":
        return None
    return string_field(block, "text")


def shows_nothing(filters: list[RoundFilter]) -> bool:
    """Whether a text block that went through `filters` is taken out: it stripped
    something and showed nothing visible."""
    return any(f.stripped_chars for f in filters) and not any(f.visible for f in filters)


@dataclass
class MessageGuard(WholeReply):
    """A whole message's guard: `filter` filters its text blocks in place."""

    def filter(self, message: dict[str, Any]) -> bool:
        """Filter `message`'s text blocks in place (taking out those left with nothing to
        show); whether anything changed."""
        content = message.get("content")
        if not is_array(content):
            return False
        kept: list[object] = []
        changed = False
        for block in content:
            text = text_of(block)
            if text is None:
                self.tool_calls = self.tool_calls or is_tool_use(block)
                kept.append(block)
                continue
            one = self.new_filter()
            shown = one.feed(text) + one.flush()
            if thought := one.take_reasoning():  # gpt-oss's analysis channel, as text
                kept.append({"type": "thinking", "thinking": thought, "signature": ""})
            if shown == text:
                kept.append(block)
                continue
            changed = True
            if not shows_nothing([one]) and is_object(block):  # a text block is an object
                kept.append({**block, "text": shown})
        if changed:
            message["content"] = kept
        return changed


def recovery_body(body: dict[str, Any]) -> dict[str, Any]:
    """The one recovery request: the same body, the correction in `system`, no tools (G2)."""
    recovery = {k: v for k, v in body.items() if k not in TOOL_FIELDS}
    recovery["system"] = system_with_correction(body.get("system"))
    return recovery


def error_event(status: int, message: str) -> bytes:
    """The in-band `error` event that ends a stream, its type the one for `status`."""
    return event_bytes(anthropic_error_body(status, message))
