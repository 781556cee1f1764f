"""The kit's default target: the mock and the reference notes app, in-process on free ports.

`pytest conformance` with no target options checks these, so a fresh checkout proves the
kit and the app against each other with one command. The app is configured as a user of
the kit would configure theirs: its model is the mock, its log file is known to the kit.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from mock_llm import serve_in_thread, serve_mock
from scaffold_guard.app.config import load_settings
from scaffold_guard.app.main import create_app


@dataclass(frozen=True)
class Stack:
    app_url: str
    mock_url: str
    log_file: Path


@contextmanager
def reference_stack(data_dir: Path, model: str | None = None) -> Generator[Stack]:
    """Serve the mock, then the app wired to it (asking for `model`, else the app's default
    model); both stop on exit."""
    with serve_mock() as mock_url:
        environ = {
            "SG_LLM_BASE_URL": f"{mock_url}/v1",
            "SG_DATA_DIR": str(data_dir),
            "SG_LLM_RETRY_DELAY_S": "0.01",
        }
        if model is not None:
            environ["SG_LLM_MODEL"] = model
        settings = load_settings(environ)
        config = uvicorn.Config(
            create_app(settings), log_level="warning", timeout_graceful_shutdown=1
        )
        with serve_in_thread(config) as app_url:
            yield Stack(app_url=f"{app_url}/", mock_url=mock_url, log_file=settings.log_file)
