"""Server-sent events for the chat stream: the frame encoding (pure) and the response.

Every frame is one `data: {json}` line and a blank line. JSON never contains a raw newline,
so model text with newlines, `\\r` or a literal `event: done` can never break a frame or
forge another one. The JSON keeps other characters as they are (smaller than `\\u`
escapes), except U+2028, U+2029 and U+0085: SSE only breaks lines at CR and LF, but
`str.splitlines` and httpx's `aiter_lines` break at those too, so they go as escapes.

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


_LINE_BREAKS_BESIDES_CR_LF = str.maketrans(
    {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"}
)


def encode(frame: Frame) -> bytes:
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
    # A lone surrogate (a model can send "\\ud800" in its JSON) goes as its JSON escape.
    data = text.translate(_LINE_BREAKS_BESIDES_CR_LF).encode(errors="backslashreplace")
    return b"data: " + data + b"\n\n"


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
