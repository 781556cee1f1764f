"""llama.cpp's real llama-server, serving a real model on a free loopback port.

`serve_llama_server(workdir)` starts the cached build (tests/thirdparty/llama_build.py:
BuildMissing, naming the one command that makes it, when it is not there) with the real
SmolLM2-135M-Instruct, greedy decoding (temperature 0) from a fixed seed, one slot, two
threads and no prompt cache, so a request answers the same text every time on a machine;
and yields its base URL once `/health` answers 200. The server's log goes to
`llama-server.log` in `workdir`, and its last lines come with any failure to start.

Deliberate choices:
- Readiness is polled on `/health` (the server has no other signal; it answers 503 while
  the model loads): a hang guard bounds the wait, it is not a timing claim.
- The server's own web page is off and its port is loopback only: tests talk to its API.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from ..support.deadlines import POLL_S
from ..support.ports import free_port
from .llama_build import LLAMA_SERVER

SEED = 42
STARTUP_DEADLINE_S = 120.0
"""The longest llama-server may take to load its 98 MB model and answer /health (a second
or two here): a hang guard."""
SERVER_ARGS = (
    "--host", "127.0.0.1", "--threads", "2", "--ctx-size", "4096", "--parallel", "1",
    "--seed", str(SEED), "--temp", "0", "--no-cache-prompt", "--no-webui",
)  # fmt: skip


@contextmanager
def serve_llama_server(workdir: Path, *extra: str) -> Generator[str]:
    """The real llama-server with the real model (see the module docstring); its URL."""
    build = LLAMA_SERVER.require()
    port = free_port()
    log_path = workdir / "llama-server.log"
    command = [str(build.server), "--model", str(build.model), *SERVER_ARGS, "--port", str(port)]
    with log_path.open("wb") as log:
        server = subprocess.Popen([*command, *extra], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_healthy(url, server, log_path)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_until_healthy(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"llama-server exited {server.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # still loading (503) or not listening yet
        time.sleep(POLL_S)
    raise RuntimeError(f"llama-server did not answer /health in {STARTUP_DEADLINE_S:g} s:\n"
                       f"{_tail(log)}")  # fmt: skip


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
