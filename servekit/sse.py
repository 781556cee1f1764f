"""Server-sent events read from an upstream body, as the official openai SDK reads them, and
one written (`json_event`). Pure.

`SseDecoder.feed(bytes)` takes the body in any pieces and returns the events completed so
far, by the SDK's and WHATWG's rules; `finish()` returns a last event with no blank line.
`LineBuffer` cuts lines, shared with `servekit.ndjson.NdjsonLines`.

Deliberate choices:
- A line over `max_line_bytes` (8 MiB) raises `LineTooLong` rather than grow without
  bound: the body comes from a server we do not control. So does an event whose `data:`
  lines, each short, add up to more (counted in the bytes read since the last event, so
  at most a piece over the bound is held).
- Bytes are cut at line ends before decoding, with `errors="replace"`, so a piece boundary
  inside a character never matters and each invalid UTF-8 sequence reads as U+FFFD.
- This is the hot path (a line per token): one decode and one split per piece, lengths
  measured only when a piece could hold a line past the limit (docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from servekit.json_codec import dumps

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "LineBuffer",
    "LineTooLong",
    "SseDecoder",
    "SseEvent",
    "json_event",
]

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024


class LineTooLong(ValueError):
    """One line of the event stream grew past the decoder's limit."""


@dataclass(frozen=True)
class SseEvent:
    event: str | None
    data: str


class LineBuffer:
    """A body's complete lines, in whatever pieces it arrives (LF line ends), with a line
    longer than `max_line_bytes` raising `LineTooLong` (`kind` names the format in it)."""

    __slots__ = ("_kind", "_max_line_bytes", "_pending", "_pending_bytes")

    def __init__(self, max_line_bytes: int, kind: str) -> None:
        self._max_line_bytes = max_line_bytes
        self._kind = kind
        self._pending: list[bytes] = []  # the pieces of an unfinished line
        self._pending_bytes = 0

    def complete(self, piece: bytes) -> bytes | None:
        """The lines `piece` completes, joined up to its last line end (that end left off),
        or None when it completes none (it is held, as part of the unfinished line)."""
        if b"\n" not in piece:  # a long line arriving in many pieces is joined once
            self._pending.append(piece)
            self._pending_bytes += len(piece)
            self._check(self._pending_bytes)
            return None
        complete, _, rest = piece.rpartition(b"\n")
        if self._pending:
            complete = b"".join([*self._pending, complete])
        self._pending = [rest] if rest else []
        self._pending_bytes = len(rest)
        self._check(self._pending_bytes)
        if len(complete) > self._max_line_bytes:
            self._check(max(map(len, complete.split(b"\n"))))
        return complete

    @property
    def holding(self) -> bool:
        """Part of an unfinished line is held."""
        return bool(self._pending)

    def rest(self) -> bytes | None:
        """The unfinished line, taken out (None when no piece of one is held)."""
        if not self._pending:
            return None
        rest = b"".join(self._pending)
        self._pending, self._pending_bytes = [], 0
        return rest

    def _check(self, size: int) -> None:
        if size > self._max_line_bytes:
            raise LineTooLong(f"an {self._kind} line is longer than {self._max_line_bytes} bytes")


class SseDecoder:
    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._lines = LineBuffer(max_line_bytes, "event-stream")
        self._max_event_bytes = max_line_bytes
        self._event_bytes = 0  # the bytes read into the unfinished event (at least its data)
        self._after_cr = False  # the last piece ended with CR: a LF that follows is its pair
        self._event: str | None = None
        self._data: list[str] = []
        self._has_field = False

    def feed(self, piece: bytes) -> list[SseEvent]:
        if self._after_cr and piece.startswith(b"\n"):
            piece = piece[1:]
        self._after_cr = piece.endswith(b"\r")
        if b"\r" in piece:
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        complete = self._lines.complete(piece)
        if complete is None:
            return []
        events: list[SseEvent] = []
        data = self._data
        for line in complete.decode("utf-8", errors="replace").split("\n"):
            if line.startswith("data: "):  # the common line: one field, no method call
                data.append(line[6:])
                self._has_field = True
                continue
            event = self._line(line)
            if event is not None:
                events.append(event)
                data = self._data
        self._event_bytes = (0 if events else self._event_bytes) + len(complete) if data else 0
        if self._event_bytes > self._max_event_bytes:
            raise LineTooLong(f"an event-stream event is longer than {self._max_event_bytes} bytes")
        return events

    @property
    def idle(self) -> bool:
        """Nothing of an unfinished line or event is held: the next piece starts afresh."""
        return not (self._after_cr or self._has_field or self._data or self._lines.holding)

    def finish(self) -> list[SseEvent]:
        """The event the body ended in the middle of, if it has any field (the SDK yields it)."""
        line = self._lines.rest()
        if line is not None:
            self._line(line.decode("utf-8", errors="replace"))
        event = self._line("")
        return [] if event is None else [event]

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._has_field:
                return None
            event = SseEvent(self._event, "\n".join(self._data))
            self._event, self._data, self._has_field = None, [], False
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name not in ("id", "retry"):
            return None
        self._has_field = True
        return None


def data_events(piece: bytes, max_event_bytes: int) -> int:
    """How many whole events `piece` is when it is nothing else: each one `data: ` line
    (LF-ended, then the blank line), valid UTF-8, none `[DONE]`, none past the bound; 0 when
    it is anything more (another field, a comment, CR line ends, a part of an event). Such a
    piece, fed to an idle SseDecoder, gives exactly its events, each `data` the line after
    `data: `; so `b"data: " + data + b"\n\n"` again, event by event, is `piece` itself.
    Byte counts and searches only: this runs on every read of a clean stream."""
    if (
        len(piece) > max_event_bytes
        or not piece.startswith(b"data: ")
        or not piece.endswith(b"\n\n")
        or b"\r" in piece
    ):
        return 0
    events = piece.count(b"\n\ndata: ") + 1  # each event's end, but the last's, then data
    if piece.count(b"\n") != 2 * events or b"data: [DONE]" in piece:
        return 0  # a line that is not a data line, a stray line end; or the stream's end
    if not piece.isascii():
        try:
            piece.decode()
        except UnicodeDecodeError:
            return 0
    return events


def json_event(value: object) -> bytes:
    """One `data:` event carrying `value` as compact JSON (`servekit.json_codec.dumps`: a
    lone surrogate is written as its escape). JSON holds no raw newline, so it is one line."""
    return b"data: " + dumps(value) + b"\n\n"
