"""Start the mock LLM and the notes app in-process on free 127.0.0.1 ports (for conftests)."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from app.config import Settings, load_settings
from app.main import create_app
from guard.server import GuardSettings
from guard.server import create_app as create_guard
from mock_llm import serve_in_thread

TEST_FLOWS = Path(__file__).parent / "fixtures" / "flows.yaml"


def app_settings(mock_url: str, data_dir: Path, **env: str) -> Settings:
    """Settings for an app whose model is the mock at `mock_url`, with fast retries."""
    return load_settings(
        {
            "SG_LLM_BASE_URL": f"{mock_url}/v1",
            "SG_DATA_DIR": str(data_dir),
            "SG_LLM_RETRY_DELAY_S": "0.01",
            "SG_LLM_TIMEOUT_S": "10",
            **env,
        }
    )


@contextmanager
def serve_app(settings: Settings) -> Generator[str]:
    config = uvicorn.Config(create_app(settings), log_level="warning", timeout_graceful_shutdown=1)
    with serve_in_thread(config) as url:
        yield url


@contextmanager
def serve_guard(upstream: str) -> Generator[str]:
    """The guard proxy, default settings, in front of the model server at `upstream`."""
    config = uvicorn.Config(create_guard(GuardSettings(upstream=upstream)), log_level="warning")
    with serve_in_thread(config) as url:
        yield url
