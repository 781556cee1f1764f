"""Peak memory of the app's model client and of the recorder against a hostile model server.

Starts `python -m app` and `python -m mock_llm record` as subprocesses on a hostile upstream
(tests/support/hostile_upstream.py, in this process), runs one clean exchange for the
baseline RSS, then each case: the peak RSS (VmHWM, reset before each case through
/proc/PID/clear_refs) must stay within `HEADROOM_BYTES` of the baseline. The bounds at
their defaults: the app reads a reply up to 64 MiB of body and 4 Mi characters of text,
a line up to 8 MiB; the recorder decodes an answer up to 16 MiB and 100,000 pieces. Linux
only (it reads /proc), loopback only, about a minute. A missed bound exits 1.

    uv run python benchmarks/hostile_clients.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import httpx
from measure import memory, reset_peak
from servers import ServerSpec, module_spec, serving

from tests.support.hostile_upstream import (
    ENDLESS,
    HostileUpstream,
    ending,
    serve_hostile_upstream,
)

MiB = 1 << 20
HEADROOM_BYTES = 128 * MiB
"""What one hostile answer may add to a client's peak RSS over its baseline."""
APP_SCRIPTS = ENDLESS  # the app stops reading
RECORDER_SCRIPTS = ending(50_000, 2048)  # the recorder relays it all: 50 MB, 2 GiB decoded


async def app_exchange(client: httpx.AsyncClient, case: str | None) -> None:
    text = "When do backups run?" + ("" if case is None else f" [[hostile:{case}]]")
    async with client.stream("POST", "/api/chat", json={"message": text}) as answer:
        async for _ in answer.aiter_raw():
            pass


async def recorder_exchange(client: httpx.AsyncClient, case: str | None) -> None:
    text = "[[mock:normal]]" if case is None else f"[[hostile:{case}]]"
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}
    async with client.stream("POST", "/v1/chat/completions", json=body) as answer:
        async for _ in answer.aiter_raw():
            pass


async def measure(
    name: str,
    spec: Callable[[int], ServerSpec],
    exchange: Callable[[httpx.AsyncClient, str | None], Awaitable[None]],
    cases: list[str],
    logs: Path,
) -> list[tuple[str, str, int, int]]:
    rows: list[tuple[str, str, int, int]] = []
    async with (
        serving(spec, logs) as server,
        httpx.AsyncClient(base_url=server.base_url, timeout=120) as client,
    ):
        pid = server.proc.pid
        await exchange(client, None)
        baseline = memory(pid)["VmRSS"] // 1024
        for case in cases:
            reset_peak(pid)
            await exchange(client, case)
            rows.append((name, case, baseline, memory(pid)["VmHWM"] // 1024))
    return rows


def app_spec(upstream: HostileUpstream, data: Path, port: int) -> ServerSpec:
    env = {**os.environ, "SG_LLM_BASE_URL": f"{upstream.url}/v1", "SG_DATA_DIR": str(data)}
    return module_spec("app", port, env=env)


def recorder_spec(upstream: HostileUpstream, out: Path, port: int) -> ServerSpec:
    spec = module_spec("mock_llm", port, "--upstream", f"{upstream.url}/v1", "--out", str(out))
    argv = [*spec.argv[:3], "record", *spec.argv[3:]]  # python -m mock_llm record ...
    return ServerSpec("recorder", argv, spec.env, spec.cwd, spec.ready_path)


async def main() -> int:
    with tempfile.TemporaryDirectory() as temp:
        logs = Path(temp)
        rows: list[tuple[str, str, int, int]] = []
        with serve_hostile_upstream(APP_SCRIPTS) as upstream:
            spec = partial(app_spec, upstream, logs / "data")
            rows += await measure("app", spec, app_exchange, list(APP_SCRIPTS), logs)
        with serve_hostile_upstream(RECORDER_SCRIPTS) as upstream:
            spec = partial(recorder_spec, upstream, logs / "recording.yaml")
            rows += await measure("recorder", spec, recorder_exchange, list(RECORDER_SCRIPTS), logs)
    print(f"peak RSS per hostile answer; bound: baseline + {HEADROOM_BYTES // MiB} MiB")
    print(
        f"{'client':<9} {'case':<16} {'baseline MiB':>12} {'peak MiB':>9} {'added MiB':>9}",
        "verdict",
    )
    failed = 0
    for client, case, baseline, peak in rows:
        added = (peak - baseline) * 1024
        ok = added <= HEADROOM_BYTES
        failed += not ok
        print(
            f"{client:<9} {case:<16} {baseline / 1024:>12.1f} {peak / 1024:>9.1f}"
            f" {added / MiB:>9.1f}  {'PASS' if ok else 'FAIL'}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
