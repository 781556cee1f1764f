"""Anthropic's Messages API (`POST /v1/messages`) as the guard proxy reads and writes it. Pure.

Shared by the streamed guard (`guard.messages_stream`) and the route
(`guard.messages_route`):

- `is_tool_use`: which content blocks are a tool call for the contract (G12);
- `shows_nothing`: a text block whose filter stripped something and left nothing visible,
  which the client never gets (below);
- `MessageGuard`: a whole (not streamed) message through the guardrail: each `text`
  block's `text` through a filter of its own, in place;
- `recovery_body`: the one recovery request (G2);
- `error_event`: the in-band `error` event that carries Anthropic's error body
  (`servekit.error_bodies.anthropic_error_body`) in a stream (the anthropic SDK raises
  `APIStatusError` on it).

Deliberate choices:
- Every content block that is neither `text` nor `thinking` nor `redacted_thinking` counts
  as a tool call (`tool_use`, `server_tool_use`, a server tool's result, an MCP call): a
  reply with a block the guard does not know is never retried.
- A text block whose markup was its only visible text is taken out of the message, not left
  as an empty (or whitespace) text block: the Messages API refuses an empty text block in a
  request, so a client that sends the conversation back would have it refused. A text block
  that stripped nothing stays as it came, empty or not.
- Thinking blocks are never filtered (G9); a `thinking` block's text is the model's
  scratchpad, and its signature covers it as it came.
- The correction goes into the top-level `system` (`guardrail.policy.system_with_correction`:
  after a blank line for text, one more text block for blocks; the correction alone when
  there is none), so the model never sees a second system prompt; `tools` and
  `tool_choice` are removed, everything else (`thinking`, `max_tokens`, `metadata`) is sent
  as it came.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from guard.reply import WholeReply
from guard.responses_api import event_bytes
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
    kind = cast(dict[str, Any], block).get("type") if isinstance(block, dict) else None
    return kind not in ANSWER_BLOCKS


def text_of(block: object) -> str | None:
    """A `text` block's text (None: not a text block, or no text in it)."""
    if not isinstance(block, dict):
        return None
    block = cast(dict[str, Any], block)
    text = block.get("text")
    return text if block.get("type") == "text" and isinstance(text, str) else None


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
        if not isinstance(content, list):
            return False
        kept: list[object] = []
        changed = False
        for block in cast(list[object], content):
            text = text_of(block)
            if text is None:
                self.tool_calls = self.tool_calls or is_tool_use(block)
                kept.append(block)
                continue
            one = self.new_filter()
            shown = one.feed(text) + one.flush()
            if shown == text:
                kept.append(block)
                continue
            changed = True
            if not shows_nothing([one]):
                kept.append({**cast(dict[str, Any], block), "text": shown})
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
