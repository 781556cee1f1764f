"""The request journal: what the mock received, in order, and how each response ended.

Tests count upstream requests per turn from it (`GET /_mock/requests?key=KEY`) and check
that a client that went away was seen going away. It is bounded twice: past `capacity` entries,
or past `max_body_bytes` of request bodies held in all, the oldest entries are dropped and
counted in `dropped`, so a server left running under load (or fed huge bodies) never grows
without limit. Entries are mutable while their response is in flight
(`outcome: in_progress`) and are finished exactly once.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["in_progress", "completed", "client_disconnected", "fault", "rejected"]
DEFAULT_CAPACITY = 1000
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass
class JournalEntry:
    seq: int
    received_at: float
    path: str
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
    disconnected_at: float | None = None
    body_bytes: int = 0
    _started: float = field(default_factory=time.perf_counter, repr=False)

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self._started) * 1000, 3)

    def note_chunks(self, count: int) -> None:
        """`count` more chunk frames went out."""
        if count and self.chunks_sent == 0:
            self.first_chunk_ms = self.elapsed_ms()
        self.chunks_sent += count

    def finish(self, outcome: Outcome, error: str | None = None) -> None:
        if self.outcome != "in_progress":
            return
        self.outcome = outcome
        self.error = error
        self.ended_ms = self.elapsed_ms()
        if outcome == "client_disconnected":
            self.disconnected_at = time.time()

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "received_at": self.received_at,
            "path": self.path,
            "key": self.key,
            "flow": self.flow,
            "step": self.step,
            "steps": self.steps,
            "request_in_turn": self.request_in_turn,
            "stream": self.stream,
            "status": self.status,
            "outcome": self.outcome,
            "error": self.error,
            "fault": self.fault,
            "chunks_sent": self.chunks_sent,
            "timings": {
                "first_chunk_ms": self.first_chunk_ms,
                "ended_ms": self.ended_ms,
                "disconnected_at": self.disconnected_at,
            },
            "body": self.body,
        }


class Journal:
    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._entries: deque[JournalEntry] = deque()
        self._capacity = capacity
        self._max_body_bytes = max_body_bytes
        self._body_bytes = 0
        self._clock = clock
        self._seq = 0
        self.dropped = 0

    def open(self, path: str) -> JournalEntry:
        """Start an entry for a request that just arrived."""
        self._seq += 1
        entry = JournalEntry(seq=self._seq, received_at=self._clock(), path=path)
        self._entries.append(entry)
        self._trim()
        return entry

    def attach_body(self, entry: JournalEntry, body: Any, size: int) -> None:
        """Keep the request body (`size` bytes on the wire) with its entry."""
        entry.body = body
        entry.body_bytes = size
        self._body_bytes += size
        self._trim()

    def _trim(self) -> None:
        while len(self._entries) > 1 and (
            len(self._entries) > self._capacity or self._body_bytes > self._max_body_bytes
        ):
            self._body_bytes -= self._entries.popleft().body_bytes
            self.dropped += 1

    def entries(self, key: str | None = None, flow: str | None = None) -> list[JournalEntry]:
        return [
            e
            for e in self._entries
            if (key is None or e.key == key) and (flow is None or e.flow == flow)
        ]

    def clear(self) -> None:
        self._entries.clear()
        self._body_bytes = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)
