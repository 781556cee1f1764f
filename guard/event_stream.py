"""The HTTP side of a streamed answer made of typed SSE events, shared by the guard proxy's
routes for the OpenAI Responses API and Anthropic's Messages API.

A pure guard (`ResponsesStreamGuard`, `MessagesStreamGuard`) says what the client gets for
each upstream event; `EventStreamCall` is the flow around it: the stream read through the
guard, the one recovery through a second guard into the same client stream, and each API's
in-band failure. A route supplies its guard, failure event, keep-alive, recovery and body.

Deliberate choices:
- A read that fails once the guard saw the stream's end is not a failure: the answer is whole.
- What one upstream read becomes goes out as one write, so a stream reaches the client
  read for read and released held events travel with the text, not as a burst.
- A client that leaves closes the upstream response at once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

import aiohttp

from guard.openai_http import KEEPALIVE, SseCall, error_message, next_piece
from guard.upstream import STREAM_FAULTS, fault_message
from servekit.sse import SseDecoder, SseEvent

__all__ = ["EventStreamCall", "EventStreamGuard"]


class EventStreamGuard(Protocol):
    """The guardrail over one upstream stream of typed events (pure)."""

    recovering: bool  # the reply ended needing the recovery: the rest is dropped
    ended: bool  # the stream's own end (or a failure) went out: nothing more is due

    @property
    def stripped_chars(self) -> int: ...

    @property
    def first_span(self) -> str: ...

    def event(self, event: SseEvent, /) -> list[bytes]:
        """What the client gets for one upstream event."""
        ...

    def end(self) -> list[bytes] | None:
        """What the client gets once the upstream body ended."""
        ...


G = TypeVar("G", bound=EventStreamGuard)


class EventStreamCall(SseCall, Generic[G]):
    """A guarded request whose streamed answer is typed SSE events (see the module
    docstring)."""

    keepalive = KEEPALIVE
    """What the client gets during an upstream silence mid-stream."""

    async def stream(
        self, body: dict[str, Any], response: aiohttp.ClientResponse
    ) -> AsyncGenerator[bytes]:
        try:
            async for piece in self.recovered_stream(
                body, response, partial(self.stream_guard, body), self._relayed, self._refused
            ):
                yield piece
        finally:
            self.log(self.route, stream=True)

    async def _refused(self, first: G, recovery: aiohttp.ClientResponse | str) -> bytes:
        if isinstance(recovery, str):
            return self.failure(first, recovery, 502)
        return self.failure(first, await error_message(recovery), recovery.status)

    async def _relayed(
        self, response: aiohttp.ClientResponse, guard: G, round_number: int
    ) -> AsyncGenerator[bytes]:
        """One upstream stream through `guard`, as it comes, to the end of its body; ends
        early, with the route's failure, when the upstream cuts it or goes past a bound
        (`fault_message`)."""
        decoder, ended = SseDecoder(self.settings.max_line_bytes), False
        try:
            while not ended:
                out: list[bytes] = []
                try:
                    piece = await next_piece(response, self.settings.keepalive_s)
                    if piece is None:
                        yield self.keepalive  # the upstream is silent (a model thinking)
                        continue
                    for event in decoder.feed(piece) if piece else decoder.finish():
                        out += guard.event(event)
                    ended = not piece
                except STREAM_FAULTS as exc:
                    whole = guard.ended or guard.recovering  # the stream had said everything
                    if not whole:
                        self.failed = True
                        out.append(self.failure(guard, fault_message(exc), 502))  # says so
                    if out:
                        yield b"".join(out)
                    if not whole:
                        return
                    break
                if out:  # one write for what one read brought
                    yield b"".join(out)
            rest = guard.end()
            if rest:
                yield b"".join(rest)
        finally:
            if ended:
                response.release()
            else:
                response.close()  # the client left, or the stream broke: the upstream learns
            self.count(guard.stripped_chars, guard.first_span, round_number)

    # --- what each route says -------------------------------------------------------------

    def stream_guard(self, body: dict[str, Any], follows: G | None) -> G:
        """The guard of a streamed answer to `body` (`follows`: the first reply's guard, for
        the recovery's; None for the first)."""
        raise NotImplementedError

    def failure(self, guard: G, message: str, status: int) -> bytes:
        """The end of a stream that `guard` was guarding when it broke: the route's in-band
        error saying `message` (`status`: the upstream's, 502 for a cut)."""
        raise NotImplementedError
