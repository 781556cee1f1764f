"""Each API's reply guard as the flow's `StreamRound` (guard/wire/api.py). Pure.

- `ChatRound`: a chat completion stream, read up to its `[DONE]`; a cut ends the client's
  stream with the in-band error event, and an empty recovery with the malformed-reply one.
- `EventRound`: a stream of typed events (the Responses and Messages APIs), read to the end
  of its body; a cut after the stream said everything is no fault.
- `NdjsonRound`: Ollama's NDJSON lines, read to the end of the body; a cut ends the
  client's stream with what the filter held and an error line, and a reply whose done
  line asked for the recovery still gets it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from guard.wire.api import Unit
from guard.wire.chat_stream import StreamGuard
from guard.wire.faults import CUT_OFF
from guard.wire.ollama import OllamaStreamGuard, error_line
from guard.wire.openai_errors import error_event
from guardrail.policy import MALFORMED_REPLY
from servekit.sse import SseEvent


class _Counted(Protocol):
    recovering: bool

    @property
    def stripped_chars(self) -> int: ...

    @property
    def first_span(self) -> str: ...


C = TypeVar("C", bound=_Counted)


class _Tallied(Generic[C]):
    """A round's counts and recovery, read from its guard."""

    guard: C

    @property
    def recovering(self) -> bool:
        return self.guard.recovering

    @property
    def stripped_chars(self) -> int:
        return self.guard.stripped_chars

    @property
    def first_span(self) -> str:
        return self.guard.first_span


@dataclass
class ChatRound(_Tallied[StreamGuard]):
    guard: StreamGuard
    done: bool = False

    @property
    def settled(self) -> bool:
        return self.done and not self.guard.recovering

    def passes(self, piece: bytes, max_event_bytes: int) -> bool:
        return not self.done and self.guard.passes(piece, max_event_bytes)

    @property
    def passing_decided(self) -> bool:
        return self.done or self.guard.passing_decided

    def take(self, unit: Unit) -> list[bytes]:
        if not isinstance(unit, SseEvent) or self.done:
            return []
        if unit.data.startswith("[DONE]"):
            self.done = True
            return []
        return self.guard.chunk(unit.data)

    def fault(self, message: str) -> list[bytes] | None:
        return [error_event(message, 502)]

    def end(self) -> list[bytes]:
        rest = self.guard.end(done=self.done)
        if self.guard.malformed:
            return [error_event(MALFORMED_REPLY, 502)]
        return rest or []

    def refused(self, message: str, status: int) -> bytes:
        return error_event(message, status)


class EventGuard(_Counted, Protocol):
    """The guard of a typed-event stream (guard.wire.responses_stream and messages_stream)."""

    ended: bool

    def event(self, event: SseEvent, /) -> list[bytes]: ...

    def end(self) -> list[bytes] | None: ...


@dataclass
class EventRound(_Tallied["EventGuard"]):
    guard: EventGuard
    failure: Callable[[EventGuard, str, int], bytes]  # the API's in-band error
    done: bool = False  # read to the end of the body

    @property
    def settled(self) -> bool:
        return self.guard.ended and not self.guard.recovering

    def passes(self, piece: bytes, max_event_bytes: int) -> bool:
        del piece, max_event_bytes
        return False  # every event is read (typed events are renumbered, held, ...)

    passing_decided = True

    def take(self, unit: Unit) -> list[bytes]:
        return self.guard.event(unit) if isinstance(unit, SseEvent) else []

    def fault(self, message: str) -> list[bytes] | None:
        if self.guard.ended or self.guard.recovering:
            return None  # the stream had said everything
        return [self.failure(self.guard, message, 502)]

    def end(self) -> list[bytes]:
        return self.guard.end() or []

    def refused(self, message: str, status: int) -> bytes:
        return self.failure(self.guard, message, status)


@dataclass
class NdjsonRound(_Tallied[OllamaStreamGuard]):
    guard: OllamaStreamGuard
    cut: str = CUT_OFF  # what the error line says when the body ends before its done line
    done: bool = False  # read to the end of the body

    @property
    def settled(self) -> bool:
        return self.guard.finished and not self.guard.recovering

    def passes(self, piece: bytes, max_event_bytes: int) -> bool:
        del piece, max_event_bytes
        return False  # every line is read

    passing_decided = True

    def take(self, unit: Unit) -> list[bytes]:
        return self.guard.line(unit) if isinstance(unit, bytes) else []

    def fault(self, message: str) -> list[bytes] | None:
        self.cut = message
        return None  # `end` says it, after what the filter held

    def end(self) -> list[bytes]:
        return self.guard.end(self.cut)

    def refused(self, message: str, status: int) -> bytes:
        del status  # Ollama's error line has no status
        return error_line(message)
