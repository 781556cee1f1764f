"""The flow every guarded request follows, written once for every API and every driver.
Pure: no I/O.

A flow is a generator of effects that a driver carries out: `Post` (send a request body
upstream; the driver answers with an `Opened` stream, a `Whole` answer or a `Refused`),
`Read` (the next piece of the open upstream stream; bytes, b"" at its end, or a `Fault`),
`Emit` (bytes for the client) and `Settle` (the answer is complete: log it now). So the
one recovery, the rounds' counts, what a cut or a broken bound looks like and the
malformed-reply error (G2, G3, G8, G10) are decided here, whatever does the I/O: the
proxy's routes and the in-process transports of `guard.transport`, sync and async.

- `streamed(api, registry, body, tally)`: a streamed answer whose first upstream stream
  is already open (status below 300): its rounds through the API's `StreamRound`, and the
  recovery request when the first asks for it, into one client stream.
- `whole(api, registry, body, first, tally)`: a whole answer (`first`: the upstream's,
  status below 300) through the API's whole-answer guard, with the recovery; it returns
  the client's `Answer`.

Deliberate choices:
- A body that is not a JSON object is not ours to judge: it goes to the client as it came.
- A stream the upstream cut, or that broke one of the guard's bounds, ends with the API's
  in-band error (`fault_message`) and gets no recovery, unless the API says the stream had
  already said everything (`StreamRound.fault`).
- A recovery the upstream refused ends the stream with the API's error carrying the
  upstream's own message; a whole answer's is passed on as it came.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from guard.wire.api import Api, StreamRound, Unit
from guard.wire.faults import BOUNDS_BROKEN, UNREACHABLE, fault_message
from guard.wire.reply import TooManyTexts, WholeReply
from guardrail.patterns import Registry
from guardrail.policy import MALFORMED_REPLY
from servekit.json_codec import dumps, parse_object, utf8_repaired
from servekit.ndjson import NdjsonLines
from servekit.openai_chunks import DONE_EVENT
from servekit.sse import DEFAULT_MAX_LINE_BYTES, SseDecoder

T = TypeVar("T")

# --- effects, and what a driver answers them with ----------------------------------------------


@dataclass(frozen=True)
class Post:
    """Send `body` upstream, to the request's own URL with its own headers."""

    body: dict[str, Any]


@dataclass(frozen=True)
class Read:
    """The next piece of the open upstream stream."""


@dataclass(frozen=True)
class Emit:
    """Bytes for the client."""

    data: bytes


@dataclass(frozen=True)
class Settle:
    """The answer is complete: what the client gets from here on is its end. A driver that
    logs writes the request's line now, so a client that stops reading at an error line
    finds the line written."""


Effect = Post | Read | Emit | Settle


@dataclass(frozen=True)
class Opened:
    """A streamed upstream answer with a status below 300, ready to be read."""


@dataclass(frozen=True)
class Whole:
    """A whole upstream answer: its status and body."""

    status: int
    raw: bytes


@dataclass(frozen=True)
class Refused:
    """No answer to read: the upstream refused (`status`, its own message) or could not
    be reached (`status` 502, the guard's message)."""

    status: int
    message: str
    raw: bytes = b""  # the refusal's body, passed on as it came where the API does that


@dataclass(frozen=True)
class Fault:
    """The upstream stream broke: `message` says how."""

    message: str


Reply = Opened | Whole | Refused | Fault | bytes | None


@dataclass(frozen=True)
class Answer:
    """A whole answer for the client: `raw` is the upstream's own body when `changed` is
    False (its headers go with it), else the guard's."""

    status: int
    body: bytes
    changed: bool
    own: bool = False  # the guard's own error: none of the upstream's headers go with it


@dataclass
class Tally:
    """One request's counts, for its log line (G10): each round that stripped something
    (its number, the characters, its first span), the recoveries, and whether the stream
    ended in a failure."""

    recoveries: int = 0
    spans: list[tuple[int, int, str]] = field(default_factory=list[tuple[int, int, str]])
    failed: bool = False
    settled: bool = False  # the flow said Settle

    @property
    def stripped(self) -> int:
        return sum(stripped for _, stripped, _ in self.spans)

    def count(self, stripped: int, first_span: str, round_number: int) -> None:
        if stripped:
            self.spans.append((round_number, stripped, first_span))


@dataclass(frozen=True)
class Limits:
    """What the guard holds of a hostile upstream at most (docs/reliability.md)."""

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES  # a stream's line or event


def step(flow: Generator[Any, Reply, T], reply: Reply) -> tuple[Any, None] | tuple[None, T]:
    """A driver's one step: the flow's next effect after `reply`, or its result once it
    returned."""
    try:
        return flow.send(reply), None
    except StopIteration as stop:
        return None, stop.value


# --- streamed ------------------------------------------------------------------------------------


def streamed(
    api: Api, registry: Registry, body: dict[str, Any], tally: Tally, limits: Limits = Limits()
) -> Generator[Effect, Reply, None]:
    """The client's stream (see the module docstring); the first upstream stream is open."""
    first = api.stream_round(registry, body, None)
    over = yield from _round(api, first, tally, 1, limits)
    if over or not first.recovering:
        return
    tally.recoveries += 1
    opened = yield Post(api.recovery_body(body))
    if isinstance(opened, Refused):
        yield from _settled(tally)
        yield Emit(first.refused(opened.message, opened.status))
        return
    yield from _round(api, api.stream_round(registry, body, first), tally, 2, limits)


def _round(
    api: Api, round_: StreamRound, tally: Tally, number: int, limits: Limits
) -> Generator[Effect, Reply, bool]:
    """One upstream stream through `round_`, as it comes; whether it ended the client's
    stream with a failure (then no recovery follows). The round is counted, and the flow
    settled, before its answer's last bytes go out."""
    frames = SseDecoder(limits.max_line_bytes) if api.framing == "sse" else None
    lines = NdjsonLines(limits.max_line_bytes) if frames is None else None
    counted = False

    def count() -> None:
        nonlocal counted
        if not counted:
            counted = True
            tally.count(round_.stripped_chars, round_.first_span, number)

    try:
        while not round_.done:
            piece = yield Read()
            fault: str | None = piece.message if isinstance(piece, Fault) else None
            out: list[bytes] = []
            if fault is None:
                data = piece if isinstance(piece, bytes) else b""
                try:
                    if frames is not None:
                        out += _sse_read(frames, data, round_, limits.max_line_bytes)
                    elif lines is not None:
                        out += _taken(lines.feed(data) if data else lines.finish(), round_)
                except BOUNDS_BROKEN as exc:
                    fault = fault_message(exc)
            if fault is not None:
                last = round_.fault(fault)
                if last is not None:
                    tally.failed = True
                    count()
                    yield from _settled(tally)
                    yield Emit(b"".join([*out, *last]))
                    return True
                if out:
                    yield Emit(b"".join(out))
                break
            if round_.settled:  # its done line (or its own end) came: the rest is the end
                count()
                yield from _settled(tally)
            if out:  # one write for what one read brought
                yield Emit(b"".join(out))
            if not piece:
                break
        rest = round_.end()
        count()
        if not round_.recovering:
            yield from _settled(tally)
        if rest:
            yield Emit(b"".join(rest))
        return False
    finally:
        count()


def _sse_read(frames: SseDecoder, data: bytes, round_: StreamRound, limit: int) -> list[bytes]:
    """What the client gets for one read of an event stream (b"": its end): its events
    decoded and taken one by one, but its run of whole events goes out as its bytes when
    the round passes it (StreamRound.passes: decoding it could change nothing). The run is
    what lies between the end of the event a read before left unfinished and the start of
    the one this read leaves unfinished, `[DONE]` left off (reads seldom end between
    events under load, and a stream's last read carries its end); while the round cannot
    yet pass anything (a reply that has shown nothing, a span open), the run's events are
    taken one at a time until it can."""
    if not data:
        return _taken(frames.finish(), round_)
    if frames.idle:
        start = 0
    else:
        first_end = data.find(b"\n\n")
        start = -1 if first_end < 0 else first_end + 2
    end = data.rfind(b"\n\n") + 2
    if b"\r" in data or start < 0 or end <= start:
        return _taken(frames.feed(data), round_)
    out = _taken(frames.feed(data[:start]), round_) if start else []
    if data.startswith(DONE_EVENT, end - len(DONE_EVENT)):
        end -= len(DONE_EVENT)
    while start < end:
        run = data[start:end]
        if round_.passes(run, limit):  # the decoder is idle here: the run starts afresh
            out.append(run)
            start = end
        elif round_.passing_decided:  # no event read now can make it pass: read them all
            break
        else:
            first_end = data.find(b"\n\n", start) + 2
            out += _taken(frames.feed(data[start:first_end]), round_)
            start = first_end
    if start < len(data):
        out += _taken(frames.feed(data[start:]), round_)
    return out


def _taken(units: Sequence[Unit], round_: StreamRound) -> list[bytes]:
    return [data for unit in units for data in round_.take(unit)]


def _settled(tally: Tally) -> Generator[Effect, Reply, None]:
    """Settle, once a flow."""
    if not tally.settled:
        tally.settled = True
        yield Settle()


# --- whole ---------------------------------------------------------------------------------------


def whole(
    api: Api, registry: Registry, body: dict[str, Any], first: Whole, tally: Tally
) -> Generator[Post, Reply, Answer]:
    """The client's whole answer (see the module docstring)."""
    filtered = _filtered(api, registry, body, first, None, tally)
    if isinstance(filtered, Answer):
        return filtered
    guard, answer = filtered
    if not guard.wants_recovery:
        return answer
    tally.recoveries += 1
    recovery = yield Post(api.recovery_body(body))
    if isinstance(recovery, Refused):
        if recovery.raw:
            return Answer(recovery.status, recovery.raw, changed=False)
        return _error(api, recovery.status, recovery.message)
    if not isinstance(recovery, Whole):
        return _error(api, 502, UNREACHABLE)
    second = _filtered(api, registry, body, recovery, guard, tally)
    if isinstance(second, Answer):
        return second
    guard, answer = second
    return _error(api, 502, MALFORMED_REPLY, "malformed_reply") if guard.malformed else answer


def _filtered(
    api: Api,
    registry: Registry,
    body: dict[str, Any],
    answer: Whole,
    follows: WholeReply | None,
    tally: Tally,
) -> Answer | tuple[WholeReply, Answer]:
    """One whole upstream answer through a fresh guard (`follows`: the reply it recovers),
    counted as its round: the guard and the client's answer, or the answer to a body that
    is not a JSON object (as it came)."""
    raw = answer.raw
    value = parse_object(raw)
    if value is None and (repaired := utf8_repaired(raw)) is not raw:
        raw, value = repaired, parse_object(repaired)
    if value is None:
        return Answer(answer.status, raw, changed=raw is not answer.raw)
    guard = api.whole_guard(registry, body, follows)
    try:
        changed = guard.filter(value)
    except TooManyTexts as exc:
        return _error(api, 502, fault_message(exc))
    tally.count(guard.stripped_chars, guard.first_span, 1 if follows is None else 2)
    if not changed:
        return guard, Answer(answer.status, raw, changed=raw is not answer.raw)
    return guard, Answer(answer.status, dumps(value), changed=True)


def _error(api: Api, status: int, message: str, code: str | None = None) -> Answer:
    return Answer(status, api.error_body(status, message, code), changed=True, own=True)
