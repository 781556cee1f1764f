"""Server-sent events for the chat stream: the frame encoding (pure) and the response.

Every frame is one `data: {json}` line and a blank line. JSON never contains a raw newline,
so model text with newlines, `\\r`, U+2028 or a literal `event: done` can never break a
frame or forge another one.

`event_stream` serves the frames with sse-starlette's `EventSourceResponse`, a maintained
library rather than more code of our own, for what a long turn needs besides the frames:
- a `: keep-alive` comment after every `keepalive_s` of silence (a model thinking for a
  minute, a slow tool), so no proxy or browser drops the stream as idle; the page and any
  SSE reader skip comments;
- a gone client noticed at once (the ASGI disconnect message cancels the frames'
  generator, which closes the upstream stream), and a client that stops reading noticed
  after `send_timeout_s` (a send that cannot complete ends the stream the same way);
- the stream ends when the server shuts down, instead of holding the shutdown.
Frames go in already encoded (bytes pass through sse-starlette untouched).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping

from sse_starlette import EventSourceResponse, ServerSentEvent

from app.frames import Frame

KEEPALIVE_COMMENT = "keep-alive"
SEND_TIMEOUT_S = 30.0
"""How long one send to the client may block (its socket buffer full) before the turn ends."""


def encode(frame: Frame) -> bytes:
    return (
        b"data: " + json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
    )


async def encode_all(frames: AsyncIterator[Frame]) -> AsyncIterator[bytes]:
    async for frame in frames:
        yield encode(frame)


def _keepalive() -> ServerSentEvent:
    return ServerSentEvent(comment=KEEPALIVE_COMMENT, sep="\n")


def event_stream(
    frames: AsyncIterator[Frame],
    *,
    keepalive_s: float,
    headers: Mapping[str, str],
    send_timeout_s: float = SEND_TIMEOUT_S,
) -> EventSourceResponse:
    """The response streaming `frames`, with keep-alive comments during silences."""
    return EventSourceResponse(
        encode_all(frames),
        headers=headers,
        ping=keepalive_s,
        ping_message_factory=_keepalive,
        sep="\n",
        send_timeout=send_timeout_s,
    )
