"""`python -m guard --workers N`: N processes serving one socket, stopped as one."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from guard.cli import main

from ...support.deadlines import DEADLINE_S, POLL_S
from ...support.processes import guard_process
from .test_guard_cli import STARTED


def workers_of(pid: int) -> list[int]:
    """The live children of `pid` (Linux /proc; the thread's children are the process's,
    the parent having one thread)."""
    try:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except FileNotFoundError:  # the parent is gone
        return []


def started_workers(pid: int, count: int) -> list[int]:
    """The `count` workers of `pid`, once they are all there (the start line comes first)."""
    deadline = time.monotonic() + DEADLINE_S
    while len(workers := workers_of(pid)) < count:
        assert time.monotonic() < deadline, f"{len(workers)} of {count} workers started"
        time.sleep(POLL_S)
    assert len(workers) == count
    return workers


def wait_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        assert time.monotonic() < deadline, f"workers {pids} still running"
        time.sleep(POLL_S)


async def guarded_streams(url: str, count: int) -> list[str]:
    """`count` concurrent streamed turns of a markup flow; the text each client saw."""

    async def one(client: httpx.AsyncClient, n: int) -> str:
        message = f"When do backups run? [[mock:scaffold-recover#workers-{n}]]"
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": message}]}
        async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as reply:
            assert reply.status_code == 200
            lines = [line async for line in reply.aiter_lines() if line.startswith("data: {")]
        deltas = [
            c["choices"][0]["delta"] for line in lines if (c := json.loads(line[6:]))["choices"]
        ]
        return "".join(delta.get("content") or "" for delta in deltas)

    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        return await asyncio.gather(*(one(client, n) for n in range(count)))


def test_two_workers_serve_guarded_streams_and_stop_with_the_parent(tmp_path: Path, mock_url: str):
    with guard_process(tmp_path, "--upstream", f"{mock_url}/v1", "--workers", "2") as guard:
        started = STARTED.match(guard.line)
        assert started
        workers = started_workers(guard.process.pid, 2)
        bodies = asyncio.run(guarded_streams(started.group(1), 20))
        for body in bodies:
            assert "Backups run nightly" in body
            assert "<tool_call>" not in body
    assert guard.process.returncode == 0, guard.stderr
    wait_gone(workers)
    assert "Traceback" not in guard.stderr
    assert guard.stderr.count("guard: chat status=200 stream=true retries=1") == 20


def test_a_worker_that_dies_takes_the_others_down_with_its_status(tmp_path: Path, mock_url: str):
    with guard_process(tmp_path, "--upstream", f"{mock_url}/v1", "--workers", "2") as guard:
        workers = started_workers(guard.process.pid, 2)
        os.kill(workers[0], signal.SIGKILL)
        guard.process.wait(timeout=DEADLINE_S)
    assert guard.process.returncode == 128 + signal.SIGKILL
    wait_gone(workers)


def test_workers_must_be_one_or_more(capsys: pytest.CaptureFixture[str]):
    assert main(["--upstream", "http://127.0.0.1:9/v1", "--workers", "0", "--port", "0"]) == 2
    assert "--workers must be 1 or more" in capsys.readouterr().err
