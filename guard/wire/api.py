"""What the guard needs to know of one API it guards, as a value: `Api`. Pure: no I/O.

An `Api` says which requests are its own, whether a request asks for a stream, how a
stream is framed (SSE events or NDJSON lines), which guard reads a streamed round
(`StreamRound`) or a whole answer (`guard.wire.reply.WholeReply`), the one recovery request,
and what a fault looks like in the API's own shape (an in-band stream error, an error
body with its status). The flow every API follows (`guard.relay`) is written once against
this value; the drivers (the in-process transports of `guard.transport`) only do I/O.

Deliberate choice: the pure reply guards (`guard.wire.chat_stream`, `guard.wire.ollama`,
...) keep their own interfaces; each API's `StreamRound` adapts one to the flow's
(guard/wire/rounds.py), so the guards' own tests stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from guard.wire.reply import WholeReply
from guardrail.patterns import Registry
from servekit.sse import SseEvent

Framing = Literal["sse", "ndjson"]
Unit = SseEvent | bytes
"""One framed piece of a stream: an SSE event, or an NDJSON line (with its line end)."""


class StreamRound(Protocol):
    """One upstream stream (a round: the first reply, or the recovery's) through a guard."""

    @property
    def stripped_chars(self) -> int: ...

    @property
    def first_span(self) -> str: ...

    @property
    def recovering(self) -> bool:
        """The reply ended needing the one recovery (what it held is dropped)."""
        ...

    @property
    def settled(self) -> bool:
        """The stream said its answer's end (a done line, its own end event, `[DONE]`) and
        no recovery follows: what the client gets from here on is its end."""
        ...

    @property
    def done(self) -> bool:
        """The stream said its own end (chat's `[DONE]`): nothing after it is read."""
        ...

    def passes(self, piece: bytes, max_event_bytes: int, /) -> bool:
        """Whether a read that starts afresh (no unfinished line or event before it) goes
        out as its bytes, undecoded: what `take` would give for its units, unit by unit,
        with nothing changed that later output depends on."""
        ...

    @property
    def passing_decided(self) -> bool:
        """Whether no unit read from now on can make `passes` say yes where it says no now
        (then a run it refuses is decoded whole, not unit by unit)."""
        ...

    def take(self, unit: Unit, /) -> list[bytes]:
        """What the client gets for one framed unit of the upstream stream."""
        ...

    def fault(self, message: str, /) -> list[bytes] | None:
        """The upstream stream broke (`message` says how). The client's last bytes when
        that ends the client's stream (no recovery follows); None when the stream had
        already said everything, or the round still ends as usual (`end`)."""
        ...

    def end(self) -> list[bytes]:
        """The rest of the client's stream once the upstream's ended: what the filters
        held, the stream's end, or the malformed-reply error (G3); nothing when the reply
        goes on to the recovery."""
        ...

    def refused(self, message: str, status: int, /) -> bytes:
        """The end of the client's stream when the recovery request itself failed."""
        ...


@dataclass(frozen=True)
class Api:
    """One API the guard guards (see the module docstring)."""

    name: str  # the log line's name for it
    framing: Framing
    owns: Callable[[str, str], bool]  # (method, path): whether a request is this API's
    streams: Callable[[dict[str, Any]], bool]  # whether a request body asks for a stream
    stream_round: Callable[[Registry, dict[str, Any], StreamRound | None], StreamRound]
    whole_guard: Callable[[Registry, dict[str, Any], WholeReply | None], WholeReply]
    recovery_body: Callable[[dict[str, Any]], dict[str, Any]]
    error_body: Callable[[int, str, str | None], bytes]  # (status, message, code): JSON
    refusal_message: Callable[[bytes, int], str]  # an upstream error body's own message
    first_error: Callable[[bytes], str | None] | None = None
    """A stream whose first bytes would be one of the guard's own errors (Ollama's error
    line: the malformed reply, a cut before any line, a refused recovery) is that error as
    a 502 instead, its message read by this; None: a stream keeps its status."""
