"""The HTTP side of a streamed answer made of typed SSE events, shared by the guard proxy's
routes for the OpenAI Responses API (`guard.responses_route`) and Anthropic's Messages API
(`guard.messages_route`).

Both APIs stream one reply as named events (`event: <type>` and a `data:` object with the
same `type`), and both are guarded the same way: a pure guard (`EventStreamGuard`:
`guard.responses_stream.ResponsesStreamGuard`, `guard.messages_stream.MessagesStreamGuard`)
says what the client gets for each upstream event and whether the reply needs the one
recovery; `EventStreamCall` is the flow around it: the upstream stream read piece by piece
through the guard, the recovery request when the guard asks for it, whose stream goes
through a second guard made with `follows=` the first into the same client stream, and
each API's in-band failure when something breaks. A route says what is its own: its guard,
its failure event, its keep-alive bytes, its recovery request and its error body.

Deliberate choices:
- A read that fails once the upstream's stream has said all it had to (the guard saw its
  end: `ended`, or asked for the recovery) is not a failure: the answer is whole.
- What the events of one upstream read become goes to the client as one write (a stream
  reaches the client read for read, and the events a hold let go travel with the text that
  ended it, not as a burst of small sends).
- A stream the upstream cuts, a recovery it cannot be reached for (both "The model's reply
  was cut off.", status 502) and a recovery it refuses (its own message and status) end
  with the route's failure event; a client that leaves closes the upstream response at once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

import aiohttp

from guard.openai_http import KEEPALIVE, SseCall, error_message, next_piece
from guard.upstream import CUT_OFF, UPSTREAM_ERRORS
from servekit.sse import LineTooLong, SseDecoder, SseEvent

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

    async def _refused(self, first: G, recovery: aiohttp.ClientResponse | None) -> bytes:
        if recovery is None:
            return self.failure(first, CUT_OFF, 502)
        return self.failure(first, await error_message(recovery), recovery.status)

    async def _relayed(
        self, response: aiohttp.ClientResponse, guard: G, round_number: int
    ) -> AsyncGenerator[bytes]:
        """One upstream stream through `guard`, as it comes, to the end of its body; ends
        early, with the route's failure, when the upstream cuts it."""
        decoder, ended = SseDecoder(), False
        try:
            while not ended:
                try:
                    piece = await next_piece(response, self.settings.keepalive_s)
                    if piece is None:
                        yield self.keepalive  # the upstream is silent (a model thinking)
                        continue
                    events = decoder.feed(piece) if piece else decoder.finish()
                except (*UPSTREAM_ERRORS, LineTooLong):
                    if guard.ended or guard.recovering:
                        break  # the stream had said everything: the answer is whole
                    self.failed = True
                    yield self.failure(guard, CUT_OFF, 502)  # not ended: says so
                    return
                ended = not piece
                out = [data for event in events for data in guard.event(event)]
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
