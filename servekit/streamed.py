"""`StreamedResponse`: Starlette's StreamingResponse without a task group per response.

Starlette runs each streaming response in an anyio task group beside a task that listens
for the client's disconnect; under uvicorn (ASGI spec 2.3) that group, its second task and
its cancel were a tenth of the guard proxy's CPU per stream (docs/benchmarks.md, "The
guard proxy's cost"). Here the listener is one bare task that cancels the stream's scope
when the client leaves, and is cancelled once the stream has ended, as the mock plays its
responses (mock_llm/server/played.py). What the client and the body's generator see is
the same: the body as it comes, the generator stopped at once when the client leaves (its
`finally` runs), an error in the generator raised as it was.
"""

from __future__ import annotations

import asyncio

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["StreamedResponse"]


class StreamedResponse(StreamingResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        streaming = anyio.CancelScope()
        listener = asyncio.ensure_future(_until_disconnect(receive, streaming))
        with streaming:  # entered before the listener first runs (at the first await below)
            try:
                await self.stream_response(send)
            finally:
                listener.cancel()
        failed = listener.exception() if listener.done() and not listener.cancelled() else None
        if failed is not None:  # receive() raised: as a task group would, raise it
            raise failed
        if self.background is not None:
            await self.background()


async def _until_disconnect(receive: Receive, streaming: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            streaming.cancel()
            return
