"""FastAPI dependencies: the app's shared objects, typed for routes (and swappable in tests)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.rag.llm import UpstreamClient
from app.storage import QueryLog
from app.turn import TurnDeps


def turn_deps(request: Request) -> TurnDeps:
    deps: TurnDeps = request.app.state.turn_deps
    return deps


def query_log(request: Request) -> QueryLog:
    return turn_deps(request).query_log


def upstream(request: Request) -> UpstreamClient:
    client: UpstreamClient = request.app.state.upstream
    return client


TurnDepsDep = Annotated[TurnDeps, Depends(turn_deps)]
QueryLogDep = Annotated[QueryLog, Depends(query_log)]
UpstreamDep = Annotated[UpstreamClient, Depends(upstream)]
