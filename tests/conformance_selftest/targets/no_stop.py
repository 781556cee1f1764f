"""no-stop: the upstream stream is read to its end even after the user pressed Stop.

Each model request is read by a task of its own that puts the pieces in a queue, and the
turn reads the queue. When the page's Stop aborts the fetch, the turn ends as in `good`
(its generator is closed), but the reading task is not tied to it: it keeps reading the
upstream stream to the end, so the mock's journal records the request `completed`, never
`client_disconnected`. (The tasks left when the app shuts down are cancelled then.)

Must fail: G11, and nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager

from scaffold_guard.app.rag.types import ChatMessage, ToolSpec

from .base import BaseTarget, Piece, UpstreamError

MODE = "no-stop"
BREAKS = ("G11",)
ALSO_FAILS: tuple[str, ...] = ()

Item = Piece | UpstreamError | None  # None: the stream ended


class Target(BaseTarget):
    MODE = MODE

    @asynccontextmanager
    async def upstream(
        self, messages: list[ChatMessage], tools: list[ToolSpec] | None = None
    ) -> AsyncGenerator[AsyncIterator[Piece]]:
        queue: asyncio.Queue[Item] = asyncio.Queue()
        task = asyncio.create_task(self._read_all(messages, tools, queue))
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        yield _from(queue)  # leaving this context does not touch the task: the bug

    async def _read_all(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec] | None,
        queue: asyncio.Queue[Item],
    ) -> None:
        try:
            async with super().upstream(messages, tools) as pieces:
                async for piece in pieces:
                    queue.put_nowait(piece)
            queue.put_nowait(None)
        except UpstreamError as exc:
            queue.put_nowait(exc)


async def _from(queue: asyncio.Queue[Item]) -> AsyncIterator[Piece]:
    while True:
        item = await queue.get()
        if item is None:
            return
        if isinstance(item, UpstreamError):
            raise item
        yield item
