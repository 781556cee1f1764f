"""Servers as subprocesses on free loopback ports, for the benchmarks that measure them.

A server runs in its own process group, logs to a file (never a pipe, which could fill and
stall it), is ready when its readiness path answers 200, and is always stopped afterwards,
with any straggler of its group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from measure import group_stats

REPO_ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class ServerSpec:
    """How to start one server and how to tell that it is ready."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    ready_path: str


@dataclass
class RunningServer:
    """A started server subprocess (its own process group) and its base URL."""

    spec: ServerSpec
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def module_spec(
    module: str, port: int, *args: str, env: dict[str, str] | None = None
) -> ServerSpec:
    """`python -m MODULE --host 127.0.0.1 --port PORT ARGS...` from the checkout, ready when
    its /healthz answers."""
    argv = [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port), *args]
    return ServerSpec(module, argv, dict(os.environ) if env is None else env, REPO_ROOT, "/healthz")


def mock_llm_spec(flows: Path, port: int) -> ServerSpec:
    """`python -m mock_llm --flows FLOWS` from the checkout."""
    return module_spec("mock_llm", port, "--flows", str(flows))


def start_server(spec: ServerSpec, port: int, log_dir: Path) -> RunningServer:
    """Start the server in its own process group, logging to a file (never a pipe)."""
    log_path = log_dir / f"{spec.name}.log"
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            spec.argv,
            cwd=spec.cwd,
            env=spec.env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return RunningServer(spec, proc, port, log_path)


def stop_server(server: RunningServer) -> None:
    """Terminate the server's process group (only the group this script created)."""
    if server.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.proc.pid, signal.SIGTERM)
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(timeout=10)
    if group_stats(server.proc.pid):  # stragglers of our group (e.g. a reloader's worker)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.proc.pid, signal.SIGKILL)


def log_tail(server: RunningServer, lines: int = 30) -> str:
    text = server.log_path.read_text(encoding="utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


async def wait_ready(server: RunningServer) -> None:
    """Poll the server's readiness path until it answers 200, or fail with its log."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    url = server.base_url + server.spec.ready_path
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if server.proc.poll() is not None:
                raise RuntimeError(
                    f"{server.spec.name} exited with {server.proc.returncode}:\n" + log_tail(server)
                )
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url)).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(
        f"{server.spec.name} not ready after {READY_TIMEOUT_S}s:\n{log_tail(server)}"
    )


@contextlib.asynccontextmanager
async def serving(
    spec_for_port: Callable[[int], ServerSpec], log_dir: Path
) -> AsyncGenerator[RunningServer]:
    """Start a server on a free port, wait until ready, and always stop it afterwards."""
    port = free_port()
    server = start_server(spec_for_port(port), port, log_dir)
    try:
        await wait_ready(server)
        yield server
    finally:
        stop_server(server)


def guard_spec(upstream: RunningServer, port: int, *args: str) -> ServerSpec:
    """`python -m guard ARGS...` in front of `upstream`'s OpenAI-compatible API."""
    return module_spec("guard", port, "--upstream", f"{upstream.base_url}/v1", *args)
