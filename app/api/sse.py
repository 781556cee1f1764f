"""Server-sent-event framing for the chat stream. Pure.

Every frame is one `data: {json}` line and a blank line. JSON never contains a raw newline,
so model text with newlines, `\\r`, U+2028 or a literal `event: done` can never break a
frame or forge another one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from app.frames import Frame


def encode(frame: Frame) -> bytes:
    return (
        b"data: " + json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
    )


async def encode_all(frames: AsyncIterator[Frame]) -> AsyncIterator[bytes]:
    async for frame in frames:
        yield encode(frame)
