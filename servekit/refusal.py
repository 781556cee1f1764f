"""A server's own refusal sent from ASGI middleware, before any route runs: one JSON body."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import Send

__all__ = ["send_refusal"]


async def send_refusal(send: Send, status: int, body: bytes, *, close: bool = False) -> None:
    """Answer `status` with the JSON `body`; `close` ends the connection after it (the
    rest of a request not read must not be taken for the next one)."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
