"""What the stranger pages of the kit's turn finding share: serving one, and reading frames.

A stranger here is a `BaseTarget` subclass with a whole `PAGE` of its own over the targets'
`/api/chat` (text/event-stream, one `data: {json}` frame per event, targets/base.py), and
a kit profile next to its module (the module's name, `.toml`).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from servekit.in_thread import serve_in_thread

from ..targets.base import BaseTarget, build_app
from ..targets.page import READ_FRAMES_JS

ASK_JS = f"""
{READ_FRAMES_JS}
async function* frames(question) {{
  // The turn's frames, or one error frame for a refused request.
  const response = await fetch("/api/chat", {{
    method: "POST", headers: {{"content-type": "application/json"}},
    body: JSON.stringify({{message: question}}),
  }});
  if (!response.ok) {{
    yield {{type: "error", detail: `The server answered ${{response.status}}.`}};
    return;
  }}
  yield* readFrames(response);
}}
"""
"""`frames(question)`: the page's reader of one turn, for a stranger's inline script."""


def profile_of(module_file: str) -> Path:
    """The kit profile that describes the stranger of `module_file` (`__file__`)."""
    return Path(module_file).with_suffix(".toml")


@contextmanager
def serve_stranger(target: type[BaseTarget], mock_url: str, log_file: Path) -> Generator[str]:
    """Serve a stranger in-process on a free 127.0.0.1 port; yields its base URL."""
    app = build_app(target(mock_url, log_file))
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    with serve_in_thread(config) as url:
        yield url
