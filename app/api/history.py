"""GET /api/history (recent completed turns) and GET /healthz."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Query

from app.api.deps import QueryLogDep

router = APIRouter()


@router.get("/api/history")
async def history(log: QueryLogDep, limit: int = Query(default=20, ge=1, le=200)) -> dict[str, Any]:
    turns = await anyio.to_thread.run_sync(log.recent, limit)
    return {"turns": turns}


@router.get("/healthz")
async def healthz(log: QueryLogDep) -> dict[str, Any]:
    turns = await anyio.to_thread.run_sync(log.count)
    return {"status": "ok", "turns": turns}
