"""One whole (not streamed) chat completion through the guardrail. Pure: no I/O.

`CompletionGuard.filter(completion)` filters every choice's `message.content` in place,
as one whole stream each (`guardrail.policy.RoundFilter`), and says whether anything
changed, so an untouched completion can go out as the upstream's own bytes. Reasoning
fields and tool calls are left alone; reasoning routed out of the content (gpt-oss's
analysis channel written as text) joins the message's reasoning field. A single-choice
reply with no tool calls whose visible content is empty because something was stripped
gets the one recovery (`wants_recovery`); the recovery's completion is filtered by a
CompletionGuard made with `follows=` the first, which gives it the first one's id, creation
time and model, and says whether it stayed empty (`malformed`, contract G3); those rules
are `guard.wire.reply`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guard.wire.reply import WholeReply
from servekit.openai_chunks import add_reasoning, choices_of, message_of


@dataclass
class CompletionGuard(WholeReply):
    def filter(self, completion: dict[str, Any]) -> bool:
        """Filter `completion`'s answer text in place; whether anything changed."""
        changed = self.take_identity(completion)
        for choice in choices_of(completion):
            message = message_of(choice)
            if message is None:
                continue
            if message.get("tool_calls"):
                self.tool_calls = True
            content = message.get("content")
            if not isinstance(content, str):
                continue
            shown, thought = self.whole_parts(content)
            if thought:
                add_reasoning(message, thought)
            if shown != content or thought:
                message["content"] = shown
                changed = True
        return changed
