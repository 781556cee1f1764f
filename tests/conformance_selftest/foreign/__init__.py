"""Foreign Chat: a correct guardrail chat app whose page looks nothing like the reference's.

The conformance kit's proof that a profile can describe a page it was not written for:
a contenteditable editor whose Send button appears only once something is typed, a welcome
dialog and a model picker to get through first, answers streamed over a WebSocket as
HTML-escaped fragments, one URL per chat, class names only (no data-testid, no state
attribute: a finished answer shows a Copy button), its own tool on every request, a title
call to the model after every turn, and a log line of its own format. The server is
`foreign.app`, the page `foreign/static/`, the kit's description of it `profile.toml`.

    with serve_mock() as mock_url, serve_foreign(mock_url, log_file) as url:
        ...  # pytest --pyargs conformance --app-url f"{url}/" --profile PROFILE ...
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from servekit.in_thread import serve_in_thread

from .app import TITLE_PROMPT, TURN_HEADER, build_app

__all__ = ["PROFILE", "TITLE_PROMPT", "TURN_HEADER", "build_app", "serve_foreign"]

PROFILE = Path(__file__).parent / "profile.toml"


@contextmanager
def serve_foreign(mock_url: str, log_file: Path) -> Generator[str]:
    """Serve Foreign Chat in-process on a free 127.0.0.1 port; yields its base URL."""
    config = uvicorn.Config(
        build_app(mock_url, log_file), log_level="warning", timeout_graceful_shutdown=1
    )
    with serve_in_thread(config) as url:
        yield url
