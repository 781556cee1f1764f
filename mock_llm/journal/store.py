"""The request journal: what the mock received, in order, and how each response ended.

Tests count upstream requests per turn from it and check a client that left was seen
leaving. It is bounded in entries and in body bytes, the oldest dropped and counted.
Entries are mutable while in flight (`outcome: in_progress`) and finished exactly once.

Deliberate choices:
- One monotonic clock for every time field (ms since start), so any two entries compare
  and a wall-clock step cannot reorder them; `started_at` gives the wall time once.
- The JSON has a `version`: version 2 dropped version 1's wall-clock fields, so an old
  reader fails on a missing key instead of reading times of another meaning. Added fields
  (`side_call`, `request_id`, `first_seq`, `next_seq`) are compatible.
- A read says which entries it still holds (`first_seq`, `next_seq`), so a reader that
  noted `next_seq` before a turn knows whether any request since was dropped or cleared:
  `dropped` alone cannot say, as a full journal drops an old entry for every new one.
- `request_id` is the request's `X-Request-Id` header as it came (a proxy in front, such as
  `python -m guard`, sets one and logs it): it ties an entry to a line of that proxy's log.
- `on_change` fires on every arrival, identification, end and clear, so `settle.py` is
  woken instead of polling.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mock_llm.journal.query import SideCallsFilter

Outcome = Literal["in_progress", "completed", "client_disconnected", "fault", "rejected"]
DEFAULT_CAPACITY = 1000
DEFAULT_MAX_HELD_BYTES = 64 * 1024 * 1024
"""The request-body bytes the journal holds in all (not a limit on one request)."""
MAX_REQUEST_ID_CHARS = 200
"""The most of a request's `X-Request-Id` header an entry keeps."""
JOURNAL_VERSION = 2


class MockClock:
    """Milliseconds since the mock started, on a monotonic clock (the sources are injectable)."""

    def __init__(
        self,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._monotonic = monotonic
        self._origin = monotonic()
        self.started_at = wall()

    def now_ms(self) -> float:
        return round((self._monotonic() - self._origin) * 1000, 3)


def _nothing() -> None:
    return None


_STANDALONE_CLOCK = MockClock()  # for entries made outside a journal (unit tests)


@dataclass
class JournalEntry:
    seq: int
    received_ms: float
    path: str
    api: str = "openai"
    """The wire format the request came in: `openai` (chat completions), `ollama`,
    `responses`, `anthropic` (the Messages API) or `gemini`."""
    body: Any = None
    key: str | None = None
    flow: str | None = None
    step: int | None = None
    steps: int | None = None
    request_in_turn: int | None = None
    stream: bool = False
    status: int = 200
    outcome: Outcome = "in_progress"
    error: str | None = None
    fault: str | None = None
    chunks_sent: int = 0
    first_chunk_ms: float | None = None
    ended_ms: float | None = None
    disconnected_ms: float | None = None
    body_bytes: int = 0
    side_call: bool = False
    """Whether a side-call rule matched the request (it then belongs to no turn)."""
    identified: bool = False
    """Whether the request was read far enough to know its key (None when it has none)."""
    request_id: str | None = None
    """The request's `X-Request-Id` header (its first MAX_REQUEST_ID_CHARS), None without one."""
    _now_ms: Callable[[], float] = field(
        default=_STANDALONE_CLOCK.now_ms, repr=False, compare=False
    )
    _changed: Callable[[], None] = field(default=_nothing, repr=False, compare=False)

    @property
    def last_activity_ms(self) -> float:
        """When this entry last arrived or ended, on the mock's clock."""
        return self.ended_ms if self.ended_ms is not None else self.received_ms

    def identify(self, key: str | None, side_call: bool = False) -> None:
        """The request was read: it belongs to the turn `key` (None for a keyless one), or
        it is a side call made for that turn."""
        self.key = key
        self.side_call = side_call
        self.identified = True
        self._changed()

    def note_chunks(self, count: int) -> None:
        """`count` more chunk frames went out."""
        if count and self.chunks_sent == 0:
            self.first_chunk_ms = self._now_ms()
        self.chunks_sent += count

    def finish(self, outcome: Outcome, error: str | None = None) -> None:
        if self.outcome != "in_progress":
            return
        self.outcome = outcome
        self.error = error
        self.identified = True
        self.ended_ms = self._now_ms()
        if outcome == "client_disconnected":
            self.disconnected_ms = self.ended_ms
        self._changed()

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "path": self.path,
            "api": self.api,
            "key": self.key,
            "flow": self.flow,
            "step": self.step,
            "steps": self.steps,
            "request_in_turn": self.request_in_turn,
            "side_call": self.side_call,
            "request_id": self.request_id,
            "stream": self.stream,
            "status": self.status,
            "outcome": self.outcome,
            "error": self.error,
            "fault": self.fault,
            "chunks_sent": self.chunks_sent,
            "received_ms": self.received_ms,
            "first_chunk_ms": self.first_chunk_ms,
            "ended_ms": self.ended_ms,
            "disconnected_ms": self.disconnected_ms,
            "body": self.body,
        }


class Journal:
    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        max_body_bytes: int = DEFAULT_MAX_HELD_BYTES,
        clock: MockClock | None = None,
    ) -> None:
        self._entries: deque[JournalEntry] = deque()
        self.capacity = capacity
        self._max_body_bytes = max_body_bytes
        self._body_bytes = 0
        self.clock = clock if clock is not None else MockClock()
        self._seq = 0
        self.dropped = 0
        self.on_change: Callable[[], None] = _nothing
        """Called after an entry arrives or ends, and after the journal is cleared."""

    def open(self, path: str, api: str = "openai", request_id: str | None = None) -> JournalEntry:
        """Start an entry for a request that just arrived at `path`, in the wire format `api`,
        with its `X-Request-Id` header's value if it had one."""
        self._seq += 1
        entry = JournalEntry(
            seq=self._seq,
            received_ms=self.clock.now_ms(),
            path=path,
            api=api,
            request_id=None if request_id is None else request_id[:MAX_REQUEST_ID_CHARS],
            _now_ms=self.clock.now_ms,
            _changed=self._changed,
        )
        self._entries.append(entry)
        self._trim()
        self._changed()
        return entry

    def _changed(self) -> None:
        self.on_change()

    def attach_body(self, entry: JournalEntry, body: Any, size: int) -> None:
        """Keep the request body (`size` bytes on the wire) with its entry."""
        entry.body = body
        entry.body_bytes = size
        self._body_bytes += size
        self._trim()

    def _trim(self) -> None:
        while len(self._entries) > 1 and (
            len(self._entries) > self.capacity or self._body_bytes > self._max_body_bytes
        ):
            self._body_bytes -= self._entries.popleft().body_bytes
            self.dropped += 1

    @property
    def next_seq(self) -> int:
        """The `seq` the next request will get."""
        return self._seq + 1

    @property
    def first_seq(self) -> int:
        """The `seq` of the oldest entry held (`next_seq` when none is): every entry before
        it was dropped or cleared."""
        return self._entries[0].seq if self._entries else self.next_seq

    def any_unidentified(self) -> bool:
        """Whether a request is still being read, so its key (it could be any) is not known."""
        return any(not e.identified for e in self._entries)

    def entries(
        self,
        key: str | None = None,
        flow: str | None = None,
        side_calls: SideCallsFilter = "include",
    ) -> list[JournalEntry]:
        """The entries of `key` and `flow` (None: any), with side calls, without, or only."""
        return [
            e
            for e in self._entries
            if (key is None or e.key == key)
            and (flow is None or e.flow == flow)
            and (side_calls == "include" or e.side_call == (side_calls == "only"))
        ]

    def clear(self) -> None:
        self._entries.clear()
        self._body_bytes = 0
        self.dropped = 0
        self._changed()

    def to_json(self, entries: list[JournalEntry], settled: bool | None = None) -> dict[str, Any]:
        """A journal read: `entries` with the schema version, the clock, the bounds and the
        `seq` range the journal holds (from `first_seq` up to, not including, `next_seq`).

        `settled` is there only for a read that waited for its turn to settle.
        """
        read: dict[str, Any] = {
            "version": JOURNAL_VERSION,
            "started_at": self.clock.started_at,
            "now_ms": self.clock.now_ms(),
            "requests": [e.to_json() for e in entries],
            "dropped": self.dropped,
            "capacity": self.capacity,
            "first_seq": self.first_seq,
            "next_seq": self.next_seq,
        }
        if settled is not None:
            read["settled"] = settled
        return read

    def __len__(self) -> int:
        return len(self._entries)
