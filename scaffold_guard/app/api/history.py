"""GET /api/history (recent completed turns, or one tab's conversation) and GET /healthz.

/healthz also says whether the model connection pool is idle: `upstream.open_responses`
(model responses still streaming) and `upstream.idle` (none open, no pooled connection lent
out). After every turn has ended, done, failed or stopped, it is idle again.

Each turn comes with what the page needs to show it again: question, answer, sources,
tool chips, finish reason and time (`created_at`, seconds since the epoch).
"""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Query

from scaffold_guard.app.api.chat import SESSION_PATTERN
from scaffold_guard.app.api.deps import QueryLogDep, UpstreamDep

router = APIRouter()


@router.get("/api/history")
async def history(
    log: QueryLogDep,
    limit: int = Query(default=20, ge=1, le=200),
    session: str | None = Query(default=None, pattern=SESSION_PATTERN),
) -> dict[str, Any]:
    """The newest turns first; with `session`, only that tab's."""
    turns = await anyio.to_thread.run_sync(log.recent, limit, session)
    return {"turns": turns}


@router.get("/healthz")
async def healthz(log: QueryLogDep, upstream: UpstreamDep) -> dict[str, Any]:
    turns = await anyio.to_thread.run_sync(log.count)
    pool = {"open_responses": upstream.in_flight, "idle": upstream.idle()}
    return {"status": "ok", "turns": turns, "upstream": pool}
