"""Serve the mock: on a chosen port from the command line, or in-process on a free port.

This is mock_llm's public embedding API (exported from the package):
- `serve_mock()` binds 127.0.0.1 on a free port itself (so there is no race between picking
  a port and binding it), runs uvicorn in a background thread with its own event loop,
  waits until the server answers, yields the base URL (without `/v1`), and shuts down on
  exit, cutting off streams still open after a short grace period.
- `serve_in_thread()` does the same for any uvicorn config (the notes app's tests use it).
- `bind_socket()` and `socket_url()` bind a listening socket and name its URL, for a
  program that serves on a port of its own choosing (`python -m app` does).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from mock_llm.catalog import DEFAULT_MAX_RUNTIME_FLOWS, load_catalog
from mock_llm.chunking import REAL_PACING
from mock_llm.flows import ReasoningField
from mock_llm.journal import DEFAULT_CAPACITY
from mock_llm.journal import DEFAULT_MAX_BODY_BYTES as DEFAULT_JOURNAL_BYTES
from mock_llm.server import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_FLOWS_BODY_BYTES,
    MockSettings,
    create_app,
    quiet_abort_logs,
)
from mock_llm.side_calls import SideCallRules
from mock_llm.turns import DEFAULT_QUIET_RESET_S

STARTUP_TIMEOUT_S = 10.0


def build_settings(
    flow_files: tuple[str | Path, ...] = (),
    reasoning_field: ReasoningField = "reasoning_content",
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    journal_capacity: int = DEFAULT_CAPACITY,
    journal_max_body_bytes: int = DEFAULT_JOURNAL_BYTES,
    quiet_reset_s: float = DEFAULT_QUIET_RESET_S,
    max_runtime_flows: int = DEFAULT_MAX_RUNTIME_FLOWS,
    max_flows_body_bytes: int = DEFAULT_MAX_FLOWS_BODY_BYTES,
    side_calls: Iterable[str] = (),
    replay_pacing: float = REAL_PACING,
) -> MockSettings:
    """Settings with the catalog loaded; raises FlowFileError for a bad flow file, and
    SideCallsRefused for a bad side-call rule (or too many). `replay_pacing` multiplies the
    gaps of recorded steps (1: as recorded, 0: none)."""
    rules = SideCallRules.of(side_calls)
    return MockSettings(
        flows=load_catalog(flow_files),
        reasoning_field=reasoning_field,
        max_body_bytes=max_body_bytes,
        journal_capacity=journal_capacity,
        journal_max_body_bytes=journal_max_body_bytes,
        quiet_reset_s=quiet_reset_s,
        max_runtime_flows=max_runtime_flows,
        max_flows_body_bytes=max_flows_body_bytes,
        side_calls=rules.patterns,
        replay_pacing=replay_pacing,
    )


def uvicorn_config(settings: MockSettings, *, access_log: bool = False) -> uvicorn.Config:
    quiet_abort_logs()
    return uvicorn.Config(
        create_app(settings),
        access_log=access_log,
        log_level="warning",
        timeout_graceful_shutdown=2,
        lifespan="off",
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0 = any free port); OSError if taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def socket_url(sock: socket.socket) -> str:
    """The http:// base URL of a bound socket, e.g. http://127.0.0.1:43121."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


@contextmanager
def serve_mock(settings: MockSettings | None = None, host: str = "127.0.0.1") -> Generator[str]:
    """Run the mock in a background thread on a free port; yields e.g. http://127.0.0.1:43121."""
    settings = settings if settings is not None else build_settings()
    with serve_in_thread(uvicorn_config(settings), host) as url:
        yield url


@contextmanager
def serve_in_thread(config: uvicorn.Config, host: str = "127.0.0.1") -> Generator[str]:
    """Serve any ASGI app config with uvicorn in a background thread on a free port.

    The socket is bound here, before the server starts, so there is no race between picking
    a port and binding it. Yields the base URL once the server answers; stops it on exit.
    """
    sock = bind_socket(host, 0)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield socket_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=STARTUP_TIMEOUT_S)
        sock.close()
