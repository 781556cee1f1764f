"""Relay Chat: a chat app with no guardrail, for the guard proxy's proof (see app.py).

with serve_relay(f"{model_url}/v1") as url:
    ...  # pytest --pyargs conformance --app-url f"{url}/" --profile PROFILE ...
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from servekit.in_thread import serve_in_thread

from .app import build_app

__all__ = ["PROFILE", "build_app", "serve_relay"]

PROFILE = Path(__file__).parent / "profile.toml"


@contextmanager
def serve_relay(model_base_url: str) -> Generator[str]:
    """Serve Relay Chat in-process on a free 127.0.0.1 port; yields its base URL."""
    config = uvicorn.Config(
        build_app(model_base_url), log_level="warning", timeout_graceful_shutdown=1
    )
    with serve_in_thread(config) as url:
        yield url
