"""FastAPI dependencies: the app's shared objects, typed for routes (and swappable in tests).

They are `async def` though they never await: FastAPI runs a plain `def` dependency in a
worker thread, a thread hop per request for an attribute lookup.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from scaffold_guard.app.api.sse import OpenStreams
from scaffold_guard.app.rag.llm import UpstreamClient
from scaffold_guard.app.storage import QueryLog
from scaffold_guard.app.turn import TurnDeps


async def turn_deps(request: Request) -> TurnDeps:
    deps: TurnDeps = request.app.state.turn_deps
    return deps


async def query_log(request: Request) -> QueryLog:
    return (await turn_deps(request)).query_log


async def upstream(request: Request) -> UpstreamClient:
    client: UpstreamClient = request.app.state.upstream
    return client


async def open_streams(request: Request) -> OpenStreams:
    streams: OpenStreams = request.app.state.open_streams
    return streams


TurnDepsDep = Annotated[TurnDeps, Depends(turn_deps)]
QueryLogDep = Annotated[QueryLog, Depends(query_log)]
UpstreamDep = Annotated[UpstreamClient, Depends(upstream)]
