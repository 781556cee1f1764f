"""One streamed OpenAI Responses API response through the guardrail, event by event. Pure.

`ResponsesStreamGuard.event(event)` says what the client gets for each upstream event:
each part's deltas go through a filter of their own, final texts are set to what the part
streamed, the rest passes untouched (G9, G12), an unchanged event as the upstream's bytes.
A reply that needs the one recovery says so (`recovering`); the recovery's stream goes
through a second guard (`follows=`) into the same client stream, and one that shows
nothing ends with an `error` event then `response.failed` (G3).

Deliberate choices:
- Where the guard drops or writes an event, every later `sequence_number` moves so the
  client sees 0, 1, 2, ... with no gap or repeat; a renumbered event is rewritten (compact
  JSON) even if nothing else changed. Until then the bytes are the upstream's.
- A `message` item's events are held from its `output_item.added` until its first visible
  text (or another item's event), so a markup-only reply is recovered without the client
  seeing an empty message item; this delays only events that carry no text.
- One response to the client: the recovery's opening events are dropped, its completion
  takes the first stream's `id` and `created_at` (the SDK refuses a changing id) and lists
  the first stream's items the client saw before its own.
- A part that never came as deltas is filtered whole at its first final event.
- Reasoning routed out of a message's text (gpt-oss's analysis channel written as text)
  goes out as a `reasoning` item right after the message item's `output_item.done` (the
  message's events are out by then, so no index the client has moves); the upstream's later
  items move up by one, and the completion lists the item in the same place. A message
  item that is dropped for the recovery takes its reasoning with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from guard.wire.hold import Hold
from guard.wire.reply import Reply
from guard.wire.responses_api import (
    event_bytes,
    is_message,
    is_tool_call,
    output_text_of,
    raw_event,
    read_or_pass,
    reasoning_item,
    rewrite_output_text,
    rewrite_texts,
    text_parts,
    with_items_after,
)
from guardrail.json_shapes import is_array, is_object, string_field
from guardrail.policy import MALFORMED_REPLY, RoundFilter
from servekit.sse import SseEvent

OPENING = frozenset({"response.created", "response.queued", "response.in_progress"})
COMPLETION = frozenset({"response.completed", "response.incomplete"})
FAULTS = frozenset({"error", "response.failed"})
DELTA = "response.output_text.delta"

Key = tuple[int, int]  # a part: (output index as the client sees it, content index)


@dataclass
class _Part:
    """One `output_text` part: its filter while its text streams, and what the client got."""

    item_id: object
    filter: RoundFilter | None  # None once the part's text ended
    shown: list[str] = field(default_factory=list[str])

    @property
    def text(self) -> str:
        return "".join(self.shown)


@dataclass
class _Incoming:
    """One upstream event as the guard reads it: as it came, parsed, its output index as the
    client sees it, and whether the guard changed it (then it goes out re-encoded)."""

    event: SseEvent
    parsed: dict[str, Any]
    index: int | None
    changed: bool


@dataclass(frozen=True)
class _Held:
    data: bytes
    number: int | None
    index: int | None
    item: dict[str, Any] | None  # an output_item.done's item, once it goes out


@dataclass
class ResponsesStreamGuard(Reply):
    """The guardrail over one upstream Responses stream (see the module docstring)."""

    recovering: bool = False  # the reply ended needing the recovery: the rest is dropped
    ended: bool = False  # a completion or the failure went out
    faulted: bool = False  # the upstream said `error` or `response.failed`: no recovery
    base: dict[str, Any] | None = None  # the response as `response.created` showed it
    _parts: dict[Key, _Part] = field(default_factory=dict[Key, _Part])
    _item_indexes: dict[str, int] = field(default_factory=dict[str, int])
    _sent_items: dict[int, dict[str, Any]] = field(default_factory=dict[int, dict[str, Any]])
    _earlier_items: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _held: Hold[_Held] = field(default_factory=Hold[_Held])
    _held_indexes: set[int] = field(default_factory=set[int])
    _shift: int | None = 0  # upstream number -> client number; None: set by the next event
    _last_assigned: int = -1
    _last_sent: int = -1
    _top_index: int = -1  # the highest output index that went out
    _offset: int = 0  # added to upstream output indexes (a recovery's; after a reasoning item)
    _thoughts: dict[int, list[str]] = field(default_factory=dict[int, list[str]])
    """Reasoning routed out of each message item's text, by the item's output index."""
    _reasoning_after: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """The reasoning item the client got right after a message item, by the message's id."""

    def __post_init__(self) -> None:
        first = self.follows
        if isinstance(first, ResponsesStreamGuard):
            self.base = first.base
            self._shift = None
            self._last_assigned = self._last_sent = first._last_sent
            self._offset = first._top_index + 1
            self._top_index = first._top_index
            self._earlier_items = first.items_sent()

    # --- what the client gets -----------------------------------------------------------

    def event(self, event: SseEvent) -> list[bytes]:
        """What the client gets for one upstream event."""
        if self.recovering:
            return []
        out, read = read_or_pass(event, self._release)
        if read is None:
            return out
        parsed, kind = read
        one = _Incoming(event, parsed, *self._move_index(parsed))
        if kind in OPENING:
            self._opening(out, one, kind)
        elif kind == "response.output_item.added":
            self._item_added(out, one)
        elif kind == DELTA:
            self._delta(out, one)
        elif kind == "response.output_text.done":
            self._text_done(out, one)
        elif kind == "response.content_part.done":
            self._part_done(out, one)
        elif kind == "response.output_item.done":
            self._item_done(out, one)
        elif kind in COMPLETION:
            self._completion(out, one)
        else:
            if kind in FAULTS:
                self.faulted = True
                self.ended = self.ended or kind == "response.failed"
                one.changed = self._take_identity(parsed.get("response")) or one.changed
            self._forward(out, one)
        return out

    def end(self) -> list[bytes] | None:
        """The rest of the client's stream once the upstream body ended: what the filters
        still held (a stream that ended without its completion), or the malformed-reply
        failure (a recovery that showed nothing); None when the reply gets the recovery."""
        if self.recovering:
            return None
        out: list[bytes] = []
        if not self.ended and not self.faulted:
            self._close_all(out)
            if self.wants_recovery:
                self._recover()
                return None
            if self.malformed:
                self._release(out)
                return out + self._failure(MALFORMED_REPLY, "malformed_reply")
        self._release(out)
        return out

    def fail(self, message: str, code: str, failed_code: str = "server_error") -> list[bytes]:
        """The end of a stream the server saw fail (the upstream cut it, or refused the
        recovery): what was held, then the `error` event and `response.failed`."""
        if self.ended:
            return []
        out: list[bytes] = []
        self._release(out)
        return out + self._failure(message, code, failed_code)

    # --- what the recovery needs ----------------------------------------------------------

    def items_sent(self) -> list[dict[str, Any]]:
        """Every finished output item the client got, this stream's after earlier ones."""
        return [*self._earlier_items, *(self._sent_items[i] for i in sorted(self._sent_items))]

    # --- one kind of event each -----------------------------------------------------------

    def _opening(self, out: list[bytes], one: _Incoming, kind: str) -> None:
        if self.follows is not None:  # the client has the first stream's
            self._drop(one.parsed)
            return
        response = one.parsed.get("response")
        if kind == "response.created" and self.base is None and is_object(response):
            self.base = dict(response)
        one.index = None  # the response's own event: of no output item
        self._forward(out, one)

    def _item_added(self, out: list[bytes], one: _Incoming) -> None:
        index, item = one.index, one.parsed.get("item")
        if is_message(item):
            item_id = string_field(item, "id")
            if item_id is not None and index is not None:
                self._item_indexes[item_id] = index
            if index is not None and self._may_hold():
                self._held.begin()
                self._held_indexes.add(index)
        elif is_object(item) and is_tool_call(item):
            self.tool_calls = True
        self._forward(out, one)

    def _delta(self, out: list[bytes], one: _Incoming) -> None:
        parsed, index = one.parsed, one.index
        delta = parsed.get("delta")
        if not isinstance(delta, str):
            self._forward(out, one)
            return
        part = self._open_part(_key(index, parsed), parsed.get("item_id"))
        assert part.filter is not None
        shown = part.filter.feed(delta)
        self._keep_thought(index, part.filter)
        if shown:  # nothing kept for a delta that shows nothing (a span's inside)
            part.shown.append(shown)
        self._gate(out, index)
        if shown == delta:
            self._send(out, one)
        elif not shown:
            self._drop(parsed)
        else:
            parsed["delta"] = shown
            one.changed = True
            self._send(out, one)

    def _text_done(self, out: list[bytes], one: _Incoming) -> None:
        key = _key(one.index, one.parsed)
        one.changed = self._close_text(out, key, one.parsed, one.index) or one.changed
        self._send(out, one)

    def _part_done(self, out: list[bytes], one: _Incoming) -> None:
        part = one.parsed.get("part")
        if is_object(part) and part.get("type") == "output_text":
            key = _key(one.index, one.parsed)
            one.changed = self._close_text(out, key, part, one.index) or one.changed
        self._forward(out, one)

    def _item_done(self, out: list[bytes], one: _Incoming) -> None:
        index, item = one.index, one.parsed.get("item")
        finished: dict[str, Any] | None = None
        if is_object(item):
            finished = item
            if is_tool_call(finished):
                self.tool_calls = True
            for content_index, part, _ in text_parts(finished):
                key = (_index(index), content_index)
                one.changed = self._close_text(out, key, part, index) or one.changed
        self._forward(out, one, finished)
        if finished is not None and index is not None and self._thoughts.get(index):
            self._reasoning_item(out, index, finished)

    def _completion(self, out: list[bytes], one: _Incoming) -> None:
        self._close_all(out)
        response = one.parsed.get("response")
        if is_object(response):
            one.changed = self._final(response) or one.changed
        if self.wants_recovery and not self.faulted:
            self._recover()
            return
        self._release(out)
        if self.malformed:
            self._drop(one.parsed)
            out.extend(self._failure(MALFORMED_REPLY, "malformed_reply"))
            return
        self.ended = True
        one.index = None  # the response's own event: of no output item
        self._send(out, one)

    # --- the final texts ------------------------------------------------------------------

    def _final(self, response: dict[str, Any]) -> bool:
        """The completion's response with the texts the client streamed (and, for a
        recovery, the first stream's identity and items); whether it changed."""
        output = response.get("output")
        joined = output_text_of(output)
        changed = rewrite_texts(output, self._final_text)
        if self._reasoning_after and is_array(output):
            after = self._reasoning_after  # the reasoning items the client got, by message id
            response["output"] = output = with_items_after(
                output,
                lambda _p, item: after.get(string_field(item, "id") or ""),
            )
            changed = True
        if self.follows is not None:
            changed = self._take_identity(response) or changed
            if self._earlier_items and is_array(output):
                response["output"] = [*self._earlier_items, *output]
                changed = True
        return rewrite_output_text(response, joined, self.registry) or changed

    def _final_text(
        self, position: int, item: dict[str, Any], content_index: int, text: str
    ) -> str:
        item_id = item.get("id")
        index = self._item_indexes.get(item_id) if isinstance(item_id, str) else None
        part = self._parts.get((position + self._offset if index is None else index, content_index))
        return part.text if part is not None else self.whole(text)

    def _take_identity(self, response: object) -> bool:
        """A recovery's response gets the id and creation time the client saw first."""
        if self.follows is None or self.base is None or not is_object(response):
            return False
        changed = False
        for key in ("id", "created_at"):
            if key in self.base and response.get(key) != self.base[key]:
                response[key] = self.base[key]
                changed = True
        return changed

    # --- parts ----------------------------------------------------------------------------

    def _open_part(self, key: Key, item_id: object) -> _Part:
        part = self._parts.get(key)
        if part is None:
            part = self._parts[key] = _Part(item_id, self.new_filter())
        elif part.filter is None:  # more text after the part ended: a filter of its own
            part.filter = self.new_filter()
        return part

    def _close_text(
        self, out: list[bytes], key: Key, holder: dict[str, Any], index: int | None
    ) -> bool:
        """Close the text at `key` with the final `text` that `holder` (an event, a part)
        says, and write the text shown back into `holder`: whether that changed it."""
        given = holder.get("text")
        text = self._close(out, key, _str(given), index)
        if text is None or given == text:
            return False
        holder["text"] = text
        return True

    def _close(
        self, out: list[bytes], key: Key, given: str | None, index: int | None
    ) -> str | None:
        """End a part's text: what its filter held goes out as one last delta (after the
        held events, if the hold ends here); the part's text as the client got it, or None
        for a part with no text at all."""
        part = self._parts.get(key)
        tail = ""
        if part is None:
            if given is not None:
                part = self._parts[key] = _Part(None, None, [self.whole(given)])
        elif part.filter is not None:
            tail = part.filter.flush()
            self._keep_thought(key[0], part.filter)
            part.filter = None
            if tail:
                part.shown.append(tail)
        self._gate(out, index)
        if part is not None and tail:
            fields: dict[str, Any] = {
                "type": DELTA,
                "item_id": part.item_id,
                "output_index": key[0],
                "content_index": key[1],
                "delta": tail,
                "logprobs": [],
            }
            self._write(out, fields, index)
        return None if part is None else part.text

    def _close_all(self, out: list[bytes]) -> None:
        for key, part in list(self._parts.items()):
            if part.filter is not None:
                self._close(out, key, None, key[0])

    # --- reasoning routed out of the text --------------------------------------------------

    def _keep_thought(self, index: int | None, one: RoundFilter) -> None:
        if (thought := one.take_reasoning()) and index is not None:
            self._thoughts.setdefault(index, []).append(thought)

    def _reasoning_item(self, out: list[bytes], index: int, message: dict[str, Any]) -> None:
        """The reasoning routed out of a finished message item's text, as a reasoning item
        right after it; the upstream's later items move up by one."""
        text = "".join(self._thoughts.pop(index))
        item = reasoning_item(message.get("id"), text)
        where: dict[str, Any] = {"item_id": item["id"], "output_index": index + 1}
        added: dict[str, Any] = {**item, "content": [], "status": "in_progress"}
        part = {**where, "content_index": 0}
        self._offset += 1
        self._write(out, {"type": "response.output_item.added", "output_index": index + 1,
                          "item": added}, index + 1)  # fmt: skip
        self._write(out, {"type": "response.reasoning_text.delta", **part, "delta": text},
                    index + 1)  # fmt: skip
        self._write(out, {"type": "response.reasoning_text.done", **part, "text": text}, index + 1)
        self._write(out, {"type": "response.output_item.done", "output_index": index + 1,
                          "item": item}, index + 1, item)  # fmt: skip
        if isinstance(message_id := message.get("id"), str):
            self._reasoning_after[message_id] = item

    # --- holding, numbering, sending ------------------------------------------------------

    def _may_hold(self) -> bool:
        return self.follows is None and not (self.visible or self.tool_calls or self.faulted)

    def _gate(self, out: list[bytes], index: int | None) -> None:
        """End the hold unless this event belongs to a held message item and the reply may
        still need the recovery."""
        if self._held.holding and (index not in self._held_indexes or not self._may_hold()):
            self._release(out)

    def _release(self, out: list[bytes]) -> None:
        self._held_indexes.clear()
        for one in self._held.end():
            out.append(one.data)
            self._sent(one.number, one.index, one.item)

    def _recover(self) -> None:
        """The reply gets the recovery: what was held is dropped, and numbering goes on
        from the last event the client got."""
        self.recovering = True
        self._held.end()
        self._held_indexes.clear()
        self._last_assigned = self._last_sent

    def _move_index(self, parsed: dict[str, Any]) -> tuple[int | None, bool]:
        """The event's output index as the client sees it (a recovery's moves after the
        first stream's), and whether it moved."""
        index = _int(parsed.get("output_index"))
        if not self._offset or index is None:
            return index, False
        index += self._offset
        parsed["output_index"] = index
        return index, True

    def _number(self, upstream: object) -> int | None:
        """The client's number for an upstream event that goes out (None: it has none)."""
        if not isinstance(upstream, int) or isinstance(upstream, bool):
            return None
        if self._shift is None:
            self._shift = self._last_assigned + 1 - upstream
        self._last_assigned = upstream + self._shift
        return self._last_assigned

    def _drop(self, parsed: dict[str, Any]) -> None:
        """An upstream event that does not go out: the later ones move down by one."""
        if _int(parsed.get("sequence_number")) is not None and self._shift is not None:
            self._shift -= 1

    def _next_number(self) -> int:
        """The number of an event the guard writes: the later ones move up by one."""
        self._last_assigned += 1
        if self._shift is not None:
            self._shift += 1
        return self._last_assigned

    def _forward(
        self, out: list[bytes], one: _Incoming, item: dict[str, Any] | None = None
    ) -> None:
        """Send an upstream event, after what was held when the event ends the hold."""
        self._gate(out, one.index)
        self._send(out, one, item)

    def _send(self, out: list[bytes], one: _Incoming, item: dict[str, Any] | None = None) -> None:
        """An upstream event to the client (or held): its bytes as they came unless the guard
        changed it or its number (`item`: an output_item.done's item, once it goes out)."""
        parsed = one.parsed
        upstream = parsed.get("sequence_number")
        number = self._number(upstream)
        if number is not None and number != upstream:
            parsed["sequence_number"] = number
            one.changed = True
        event = one.event
        data = event_bytes(parsed) if one.changed else raw_event(event.event, event.data)
        self._put(out, _Held(data, number, one.index, item))

    def _write(
        self,
        out: list[bytes],
        fields: dict[str, Any],
        index: int | None,
        item: dict[str, Any] | None = None,
    ) -> None:
        number = self._next_number()
        self._put(
            out, _Held(event_bytes({**fields, "sequence_number": number}), number, index, item)
        )

    def _put(self, out: list[bytes], one: _Held) -> None:
        if self._held.keep(one):
            return
        out.append(one.data)
        self._sent(one.number, one.index, one.item)

    def _sent(self, number: int | None, index: int | None, item: dict[str, Any] | None) -> None:
        if number is not None:
            self._last_sent = number
        if index is not None:
            self._top_index = max(self._top_index, index)
            if item is not None:
                self._sent_items[index] = item

    def _failure(self, message: str, code: str, failed_code: str = "server_error") -> list[bytes]:
        """The `error` event and `response.failed` that end the stream (nothing is held)."""
        error: dict[str, Any] = {"type": "error", "code": code, "message": message, "param": None}
        error["sequence_number"] = self._next_number()
        response = {
            **(self.base or {"object": "response"}),
            "status": "failed",
            "error": {"code": failed_code, "message": message, "type": "guard_error"},
            "incomplete_details": None,
            "output": self.items_sent(),
            "usage": None,
        }
        failed: dict[str, Any] = {"type": "response.failed", "response": response}
        failed["sequence_number"] = self._next_number()
        self._last_sent = self._last_assigned
        self.ended = self.faulted = True
        return [event_bytes(error), event_bytes(failed)]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _index(value: int | None) -> int:
    return -1 if value is None else value


def _key(index: int | None, parsed: dict[str, Any]) -> Key:
    return (_index(index), _index(_int(parsed.get("content_index"))))


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
