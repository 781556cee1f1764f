"""One streamed Anthropic Messages API reply through the guardrail, event by event. Pure.

`MessagesStreamGuard.event(event)` says what the client gets for each upstream event: a
`text` block's `text_delta`s go through a filter of the block's own, thinking, tool_use
and other events pass untouched (G9, G12), and an unchanged event goes out as the
upstream's own bytes. A reply that needs the one recovery says so (`recovering`); the
recovery's stream goes through a second guard (`follows=`) into the same client stream
(its `message_start` dropped), and one that shows nothing ends with an in-band `error`
event (G3).

Deliberate choices:
- A text block is held from its `content_block_start` until it shows visible text; one
  that stripped something and showed nothing is dropped whole, so a markup-only reply is
  recovered unseen and no client keeps an empty text block the API would refuse when sent
  back. Events of no block (a ping) keep their place among the held ones.
- Block indexes run 0, 1, 2, ... in the order starts go out (the SDK accumulates by
  index); a renumbered event is rewritten (compact JSON) even if nothing else changed.
- An upstream `error` event ends the reply as it came, and is never recovered.
- An event that is not a JSON object is not ours to judge: it goes out as it came.
- Reasoning the filter routes out of a text block (gpt-oss's analysis channel written as
  text) goes out at once in a `thinking` block the guard opens (with an empty signature:
  no model signed it), closed before any other block's event; while the text block is
  still held, the thinking block comes before it, as a real reply orders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guard.wire.hold import Hold
from guard.wire.messages_api import error_event, is_tool_use, shows_nothing, text_of
from guard.wire.reply import Reply
from guard.wire.responses_api import event_bytes, raw_event, read_or_pass
from guardrail.json_shapes import is_object, string_field
from guardrail.policy import MALFORMED_REPLY, RoundFilter
from servekit.sse import SseEvent

__all__ = ["MessagesStreamGuard"]

ENDINGS = frozenset({"message_delta", "message_stop"})
NO_INDEX = -1  # the key of a block event without a usable index


@dataclass
class _Pending:
    """An event of a block, waiting for the block's index (`event`: as the upstream sent it;
    None for an event the guard writes)."""

    event: SseEvent | None
    parsed: dict[str, Any]
    changed: bool
    foreign: bool = False  # not the block's own: goes out as it came, even if it is dropped


@dataclass
class _Block:
    key: int  # the upstream's index
    index: int | None = None  # the client's, once its start went out
    filter: RoundFilter | None = None  # its text's filter while the text streams
    filters: list[RoundFilter] = field(default_factory=list[RoundFilter])
    held: Hold[_Pending] = field(default_factory=Hold[_Pending])
    """A text block's events, until it shows text."""


@dataclass
class MessagesStreamGuard(Reply):
    """The guardrail over one upstream Messages API stream (see the module docstring)."""

    recovering: bool = False  # the reply ended needing the recovery: the rest is dropped
    ended: bool = False  # its message_stop, an error or the failure went out
    _decided: bool = False  # the reply's end was seen and judged
    _blocks: dict[int, _Block] = field(default_factory=dict[int, _Block])
    _next_index: int = 0  # the client's index for the next block that goes out
    _thinking: int | None = None  # the client's index of the thinking block the guard opened

    def __post_init__(self) -> None:
        if isinstance(self.follows, MessagesStreamGuard):
            self._next_index = self.follows._next_index

    # --- what the client gets -----------------------------------------------------------

    def event(self, event: SseEvent) -> list[bytes]:
        """What the client gets for one upstream event."""
        if self.recovering or self.ended:
            return []
        out, read = read_or_pass(event, self._release_all)
        if read is None:
            return out
        parsed, kind = read
        if kind == "content_block_start":
            self._start(out, event, parsed)
        elif kind == "content_block_delta":
            self._delta(out, event, parsed)
        elif kind == "content_block_stop":
            self._stop(out, event, parsed)
        elif kind in ENDINGS and not self._decided and self._decide(out):
            pass  # the reply gets the recovery, or ended malformed
        elif kind != "message_start" or self.follows is None:  # the recovery's is dropped
            self._other(out, event, parsed, kind)
        return out

    def end(self) -> list[bytes]:
        """The rest of the client's stream once the upstream body ended: what the filters
        still held (a stream that ended without its `message_delta`), or the malformed-reply
        error (a recovery that showed nothing); nothing when the reply gets the recovery."""
        out: list[bytes] = []
        if self.recovering or self.ended or (not self._decided and self._decide(out)):
            return out
        self._close_all(out)
        self._end_thinking(out)
        return out

    def fail(self, message: str, status: int) -> list[bytes]:
        """The end of a stream the server saw fail (the upstream cut it, or refused the
        recovery): the `error` event, its type the one for `status`."""
        if self.ended:
            return []
        self.ended = True
        return [error_event(status, message)]

    # --- the reply's end ------------------------------------------------------------------

    def _decide(self, out: list[bytes]) -> bool:
        """Judge the reply at its end: whether it gets the recovery or ended malformed (then
        nothing more of it goes out)."""
        self._decided = True
        self._close_all(out)
        self._end_thinking(out)
        if self.wants_recovery:
            self.recovering = True
            return True
        if self.malformed:
            out.append(error_event(502, MALFORMED_REPLY))
            self.ended = True
            return True
        return False

    # --- one kind of event each -----------------------------------------------------------

    def _start(self, out: list[bytes], event: SseEvent, parsed: dict[str, Any]) -> None:
        key = _key(parsed)
        announced = parsed.get("content_block")
        text = text_of(announced)
        block = self._blocks[key] = _Block(key)
        if text is None:
            self.tool_calls = self.tool_calls or is_tool_use(announced)
            self._send(out, block, _Pending(event, parsed, False))
            return
        block.held.begin()
        shown = self._filter(block).feed(text)
        self._think(out, self._filter(block))
        if shown != text and is_object(announced):  # a text block is an object
            announced["text"] = shown
        self._add(out, block, _Pending(event, parsed, shown != text))

    def _delta(self, out: list[bytes], event: SseEvent, parsed: dict[str, Any]) -> None:
        key = _key(parsed)
        block = self._blocks.setdefault(key, _Block(key))
        delta = parsed.get("delta")
        text = _text_delta(delta)
        if text is None:
            self._release(out, block)  # another kind of content: the block shows
            self._send(out, block, _Pending(event, parsed, False))
            return
        shown = self._filter(block).feed(text)
        self._think(out, self._filter(block))
        if not shown:
            return  # nothing to show (held back or stripped): not sent
        if shown != text and is_object(delta):  # a text delta is an object
            delta["text"] = shown
        self._add(out, block, _Pending(event, parsed, shown != text))

    def _other(self, out: list[bytes], event: SseEvent, parsed: dict[str, Any], kind: str) -> None:
        """An event of no block (a ping, an error, the message's own): in its place among a
        held block's events, or out now (an error first lets out what was held)."""
        self.ended = kind in ("message_stop", "error")
        holding = [b for b in self._blocks.values() if b.held.holding]
        if holding and not self.ended:
            holding[-1].held.keep(_Pending(event, parsed, False, True))
            return
        self._release_all(out)
        self._end_thinking(out)
        out.append(raw_event(event.event, event.data))

    def _stop(self, out: list[bytes], event: SseEvent, parsed: dict[str, Any]) -> None:
        block = self._blocks.get(_key(parsed))
        if block is None:  # a block never started: not ours to judge
            out.append(raw_event(event.event, event.data))
            return
        self._close(out, block)
        if block.index is not None:  # a dropped block's stop is dropped with it
            self._send(out, block, _Pending(event, parsed, False))

    # --- blocks ---------------------------------------------------------------------------

    def _filter(self, block: _Block) -> RoundFilter:
        """The block's open filter (a fresh one for text after the block's text ended)."""
        if block.filter is None:
            block.filter = self.new_filter()
            block.filters.append(block.filter)
        return block.filter

    def _close(self, out: list[bytes], block: _Block) -> None:
        """End a block's text: what its filter held goes out as one last text delta, then
        the block shows, or is dropped when it stripped something and showed nothing."""
        one, block.filter = block.filter, None
        tail = one.flush() if one is not None else ""
        if one is not None:
            self._think(out, one)
        if tail:
            fields = {"type": "text_delta", "text": tail}
            delta = {"type": "content_block_delta", "index": block.key, "delta": fields}
            self._add(out, block, _Pending(None, delta, True))
        if block.held.holding and shows_nothing(block.filters):
            for pending in block.held.end():  # dropped: none of its own events go out
                if pending.foreign:
                    self._write(out, block, pending)
            return
        self._release(out, block)

    def _close_all(self, out: list[bytes]) -> None:
        for block in list(self._blocks.values()):
            if block.filter is not None or block.held.holding:
                self._close(out, block)

    def _add(self, out: list[bytes], block: _Block, pending: _Pending) -> None:
        """Send a text event of the block, or hold it while the block shows nothing."""
        self._send(out, block, pending)
        if any(f.visible for f in block.filters):
            self._release(out, block)

    def _release_all(self, out: list[bytes]) -> None:
        for block in list(self._blocks.values()):
            self._release(out, block)

    def _release(self, out: list[bytes], block: _Block) -> None:
        for pending in block.held.end():
            self._write(out, block, pending)

    def _send(self, out: list[bytes], block: _Block, pending: _Pending) -> None:
        if not block.held.keep(pending):
            self._write(out, block, pending)

    def _write(self, out: list[bytes], block: _Block, pending: _Pending) -> None:
        """One event of the block to the client, with the block's index (given now, when
        this is the block's first event that goes out); an event held among the block's
        goes out as it came."""
        if pending.foreign:
            assert pending.event is not None
            out.append(raw_event(pending.event.event, pending.event.data))
            return
        self._end_thinking(out)
        if block.index is None:
            block.index = self._next_index
            self._next_index += 1
        parsed, event, changed = pending.parsed, pending.event, pending.changed
        if parsed.get("index") != block.index:
            parsed["index"] = block.index
            changed = True
        if changed or event is None:
            out.append(event_bytes(parsed))
        else:
            out.append(raw_event(event.event, event.data))

    # --- reasoning routed out of the text ---------------------------------------------------

    def _think(self, out: list[bytes], one: RoundFilter) -> None:
        """Reasoning the filter routed out of a text block (gpt-oss's analysis channel
        written as text): a thinking block's delta, in a block the guard opens for it."""
        thought = one.take_reasoning()
        if not thought:
            return
        if self._thinking is None:
            self._thinking = self._next_index
            self._next_index += 1
            block = {"type": "thinking", "thinking": "", "signature": ""}
            start = {"type": "content_block_start", "index": self._thinking}
            out.append(event_bytes({**start, "content_block": block}))
        delta = {"type": "thinking_delta", "thinking": thought}
        out.append(
            event_bytes({"type": "content_block_delta", "index": self._thinking, "delta": delta})
        )

    def _end_thinking(self, out: list[bytes]) -> None:
        """Close the thinking block the guard opened, before anything else goes out."""
        if self._thinking is not None:
            out.append(event_bytes({"type": "content_block_stop", "index": self._thinking}))
            self._thinking = None


def _key(parsed: dict[str, Any]) -> int:
    index = parsed.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else NO_INDEX


def _text_delta(delta: object) -> str | None:
    """A delta's `text` (a `text_delta`'s; None: another kind of delta)."""
    return string_field(delta, "text")
