"""Serve the mock: on a chosen port from the command line, or in-process on a free port.

This is mock_llm's public embedding API (exported from the package):
- `build_settings()` loads the catalog (built-ins and flow files) into `MockSettings`;
- `serve_mock()` serves the mock in a background thread on a free port of 127.0.0.1
  (`servekit.in_thread.serve_in_thread`), yields the base URL (without `/v1`), and shuts
  down on exit, cutting off streams still open after a short grace period.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from mock_llm.flows.catalog import DEFAULT_MAX_RUNTIME_FLOWS, load_catalog
from mock_llm.flows.chunking import REAL_PACING
from mock_llm.flows.model import Dialect, ReasoningField
from mock_llm.journal.store import DEFAULT_CAPACITY, DEFAULT_MAX_HELD_BYTES
from mock_llm.play.side_calls import SideCallRules
from mock_llm.play.turns import DEFAULT_QUIET_RESET_S
from mock_llm.server.app import create_app
from mock_llm.server.played import quiet_abort_logs
from mock_llm.server.state import DEFAULT_MAX_FLOWS_BODY_BYTES, MockSettings
from servekit.allowed_hosts import HostPolicy
from servekit.in_thread import serve_in_thread
from servekit.limits import DEFAULT_MAX_BODY_BYTES, LOCAL_ONLY


def build_settings(
    flow_files: tuple[str | Path, ...] = (),
    reasoning_field: ReasoningField = "reasoning_content",
    dialect: Dialect = "openai",
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    journal_capacity: int = DEFAULT_CAPACITY,
    journal_max_body_bytes: int = DEFAULT_MAX_HELD_BYTES,
    quiet_reset_s: float = DEFAULT_QUIET_RESET_S,
    max_runtime_flows: int = DEFAULT_MAX_RUNTIME_FLOWS,
    max_flows_body_bytes: int = DEFAULT_MAX_FLOWS_BODY_BYTES,
    side_calls: Iterable[str] = (),
    replay_pacing: float = REAL_PACING,
    hosts: HostPolicy = LOCAL_ONLY,
) -> MockSettings:
    """Settings with the catalog loaded; raises FlowFileError for a bad flow file, and
    SideCallsRefused for a bad side-call rule (or too many). `replay_pacing` multiplies the
    gaps of recorded steps (1: as recorded, 0: none)."""
    rules = SideCallRules.of(side_calls)
    return MockSettings(
        flows=load_catalog(flow_files),
        reasoning_field=reasoning_field,
        dialect=dialect,
        max_body_bytes=max_body_bytes,
        journal_capacity=journal_capacity,
        journal_max_body_bytes=journal_max_body_bytes,
        quiet_reset_s=quiet_reset_s,
        max_runtime_flows=max_runtime_flows,
        max_flows_body_bytes=max_flows_body_bytes,
        side_calls=rules.patterns,
        replay_pacing=replay_pacing,
        hosts=hosts,
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


@contextmanager
def serve_mock(settings: MockSettings | None = None, host: str = "127.0.0.1") -> Generator[str]:
    """Run the mock in a background thread on a free port; yields e.g. http://127.0.0.1:43121."""
    settings = settings if settings is not None else build_settings()
    with serve_in_thread(uvicorn_config(settings), host) as url:
        yield url
