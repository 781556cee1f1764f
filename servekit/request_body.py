"""A request's body read whole within bounds: the one loop every server here reads with.

`read_body(receive, max_bytes, timeout_s)` takes ASGI `http.request` messages until the
last one and gives the body and, when a message of another type (a disconnect) ended it
early, that message, so the caller can pass it on or answer it. Past `max_bytes` it raises
`BodyTooLarge` (as `check_declared_length` does for a Content-Length that says more), and
past `timeout_s` `BodyTimeout`; each carries the status and the message
a server answers with. `None` for either bound means none.

Raw ASGI rather than Starlette's `Request.stream()`: the request limits middleware reads
before any Starlette request exists, and the recorder is a bare ASGI app.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from servekit.request_head import body_too_large

if TYPE_CHECKING:
    from starlette.types import Message, Receive

__all__ = ["BodyRefused", "BodyTimeout", "BodyTooLarge", "check_declared_length", "read_body"]


class BodyRefused(Exception):
    """A body a server will not take: the status and the message it answers with."""

    status: int

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BodyTooLarge(BodyRefused):
    status = 413

    def __init__(self, max_bytes: int) -> None:
        super().__init__(body_too_large(max_bytes))


class BodyTimeout(BodyRefused):
    status = 408

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"The request body did not arrive within {timeout_s:g} s.")


def check_declared_length(content_length: bytes | str, max_bytes: int | None) -> None:
    """Raise BodyTooLarge when a Content-Length value already says more than `max_bytes`,
    before any byte of the body is read."""
    if max_bytes is not None and content_length.isdigit() and int(content_length) > max_bytes:
        raise BodyTooLarge(max_bytes)


async def read_body(
    receive: Receive, max_bytes: int | None, timeout_s: float | None
) -> tuple[bytes, Message | None]:
    """The whole body, and the message that ended it early (a disconnect), if any."""
    try:
        async with asyncio.timeout(timeout_s):
            return await _read(receive, max_bytes)
    except TimeoutError:
        if timeout_s is None:  # not the bound's: no bound, no timeout of ours
            raise
        raise BodyTimeout(timeout_s) from None


async def _read(receive: Receive, max_bytes: int | None) -> tuple[bytes, Message | None]:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), message
        part: bytes = message.get("body", b"")
        size += len(part)
        if max_bytes is not None and size > max_bytes:
            raise BodyTooLarge(max_bytes)
        parts.append(part)
        if not message.get("more_body", False):
            return b"".join(parts), None
