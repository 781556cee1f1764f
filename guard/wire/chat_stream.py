"""One streamed chat completion through the guardrail, chunk by chunk. Pure: no I/O.

`StreamGuard` says what the client gets for each upstream `data:` payload: the payload as
it came when nothing changed, the chunk with its content filtered, or nothing. A finish
chunk carries what its filter held (G8). A reply needing the one recovery drops the rest
and says so; the recovery's stream goes through a second StreamGuard (`follows=`).

Deliberate choices:
- Each choice's `delta.content` is filtered through its own filter; every other field
  passes untouched (G9, G12). Reasoning the filter routes out of the content (gpt-oss's
  analysis channel written as text) joins the delta's reasoning field.
- Recovery is for a single-choice reply only: with several there is no one to retry.
- A recovery stream takes the first one's id, time and model and loses its role, so the
  client sees one completion; `malformed` says whether it stayed empty (G3).
- A chunk the guard writes is compact JSON; the rest are the upstream's own bytes.
- `passes` lets a whole read of clean chunks through as its bytes, undecoded (issue 43: a
  Python proxy's cost per chunk is mostly the decoding), only where decoding it could not
  change a byte or a decision: the one choice has shown text, nothing is held or open, and
  the read holds neither its filter's quiet character (raw or as a JSON escape) nor another
  choice, tool calls or `[DONE]`. Anything else is decoded, chunk by chunk, as before.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from guard.wire.reply import Reply
from guardrail.policy import RoundFilter
from servekit.json_codec import parse_object
from servekit.openai_chunks import DONE_EVENT, add_reasoning, choices_of, delta_of
from servekit.sse import data_events, json_event

NOT_CHOICE_ZERO = re.compile(rb'"index"\s*+:\s*+(?!0[^0-9])')
"""An `index` other than 0 (another choice, or a tool call's): the read is decoded."""


def sse(data: str) -> bytes:
    return b"data: " + data.encode() + b"\n\n"


@dataclass
class StreamGuard(Reply):
    """The guardrail over one upstream stream (see the module docstring)."""

    by_choice: dict[int, RoundFilter] = field(default_factory=dict[int, RoundFilter])
    recovering: bool = False  # the reply ended needing the recovery: the rest is dropped

    # --- what the client gets -----------------------------------------------------------

    def chunk(self, data: str) -> list[bytes]:
        """What the client gets for one `data:` payload (not `[DONE]`)."""
        chunk = parse_object(data)
        if chunk is None:  # not ours to judge (nested past the parser's limit too)
            return [sse(data)]  # the client's parser will say
        if self.recovering:
            return []
        choices = choices_of(chunk)  # taken once: the steps below change choices in place
        changed = self.take_identity(chunk)
        changed = self._filter(choices) or changed
        if self.follows is not None:
            changed = _drop_role(choices) or changed
        if _finishes(choices) and self.wants_recovery:
            self.recovering = True
            return []
        if not changed:
            return [sse(data)]
        return [json_event(chunk)] if _carries_anything(chunk) else []

    def end(self, *, done: bool) -> list[bytes] | None:
        """The rest of the client's stream once the upstream stream ended (`done`: with
        `[DONE]`): what the filters still held (a stream cut before its finish), then
        `[DONE]`; or None when the reply gets the one recovery instead."""
        if not self.recovering and self.wants_recovery:
            self.recovering = True  # a stream that ended without a finish chunk
        if self.recovering:
            return None
        out = [
            chunk
            for index, filter_ in sorted(self.by_choice.items())
            if (chunk := self._tail_chunk(index, filter_)) is not None
        ]
        if done:
            out.append(DONE_EVENT)
        return out

    def passes(self, piece: bytes, max_event_bytes: int) -> bool:
        """Whether `piece`, a read starting afresh (an idle SseDecoder), would come out of
        `chunk` event by event exactly as it is, with nothing of the guard's state changed
        that any later output depends on: then it goes out undecoded (the module
        docstring)."""
        quiet = self._quiet_char()
        if quiet is None:
            return False
        return (
            all(telltale not in piece for telltale in _telltales(quiet))
            and b'"tool_calls"' not in piece
            and NOT_CHOICE_ZERO.search(piece) is None
            and data_events(piece, max_event_bytes) > 0
        )

    @property
    def passing_decided(self) -> bool:
        """Whether no chunk read from now on can make `passes` say yes where it says no now:
        the recovery's stream, a recovering reply, several choices, a filter that is quiet
        already or never will be (one that has shown nothing yet, or holds something, may
        turn quiet). Only what a read costs depends on it, never what the client gets."""
        if self.follows is not None or self.recovering or len(self.by_choice) > 1:
            return True
        filter_ = self.by_choice.get(0)
        if filter_ is None or not filter_.visible:
            return False
        return filter_.quiet_char is not None or not filter_.may_turn_quiet

    # --- inside ---------------------------------------------------------------------------

    def _quiet_char(self) -> str | None:
        """The one choice's filter's quiet character (RoundFilter.quiet_char), when it may
        pass reads: a first reply's one choice that has shown text."""
        if self.follows is not None or self.recovering or len(self.by_choice) != 1:
            return None
        filter_ = self.by_choice.get(0)
        if filter_ is None or not filter_.visible:
            return None  # the reply may still need the recovery: every chunk is read
        quiet = filter_.quiet_char
        return quiet if quiet is not None and ord(quiet) <= 0xFFFF else None

    def _filter(self, choices: list[dict[str, Any]]) -> bool:
        """Filter each choice's content in place (a finishing choice also gets what its
        filter held); whether any changed."""
        changed = False
        for choice in choices:
            delta = delta_of(choice)
            delta = {} if delta is None else delta
            if delta.get("tool_calls"):
                self.tool_calls = True
            content = delta.get("content")
            text = content if isinstance(content, str) else ""
            index = choice.get("index", 0)
            index = index if isinstance(index, int) else 0
            filter_ = self.by_choice.get(index)
            if filter_ is None:
                if not text:
                    continue
                filter_ = self.by_choice[index] = self.new_filter()
            shown = filter_.feed(text) if text else ""
            if choice.get("finish_reason") is not None:
                shown += filter_.flush()  # the choice ends here: what was held is text
            thought = filter_.take_reasoning()
            if shown == text and not thought:
                continue
            changed = True
            choice["delta"] = delta
            if thought:
                add_reasoning(delta, thought)
            if shown:
                delta["content"] = shown
            else:
                delta.pop("content", None)
        return changed

    def _tail_chunk(self, index: int, filter_: RoundFilter) -> bytes | None:
        """What a choice's filter still held (and the reasoning it routed), as one chunk."""
        delta: dict[str, object] = {}
        if tail := filter_.flush():
            delta["content"] = tail
        if thought := filter_.take_reasoning():
            add_reasoning(delta, thought)
        if not delta:
            return None
        return json_event(
            {
                **self.identity,
                "object": "chat.completion.chunk",
                "choices": [{"index": index, "delta": delta, "finish_reason": None}],
            }
        )


@functools.cache
def _telltales(quiet: str) -> tuple[bytes, ...]:
    """What a read holds when `quiet` may be in its text: the character, and its JSON
    escape's start (`\\u003` for `<`: any of U+0030-U+003F; both cases of a hex letter)."""
    digits = f"{ord(quiet):04x}"[:-1]
    escapes = [f"\\u{digits}".encode(), f"\\u{digits.upper()}".encode()]
    return tuple(dict.fromkeys([quiet.encode(), *escapes]))


def _drop_role(choices: list[dict[str, Any]]) -> bool:
    """A recovery's chunk loses its role (the client saw the first stream's); whether any did."""
    changed = False
    for choice in choices:
        delta = delta_of(choice)
        if delta is not None and "role" in delta:
            del delta["role"]
            changed = True
    return changed


def _finishes(choices: list[dict[str, Any]]) -> bool:
    return any(c.get("finish_reason") is not None for c in choices)


def _carries_anything(chunk: dict[str, Any]) -> bool:
    """Whether a changed chunk still says something (a delta field, a finish, usage)."""
    if chunk.get("usage") is not None:
        return True
    for choice in choices_of(chunk):
        if choice.get("finish_reason") is not None or choice.get("logprobs"):
            return True
        delta = delta_of(choice)
        if delta is not None and any(value not in (None, "") for value in delta.values()):
            return True
    return False
