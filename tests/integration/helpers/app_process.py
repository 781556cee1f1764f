"""`python -m app` as a child process: its embedded demo started with its data under a test's
folder, its announced URLs, and one turn's SSE frames over HTTP."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from ...support.processes import child_env

PAGE = re.compile(r"app: notes chat on (http://127\.0\.0\.1:\d+)/ ")
MOCK = re.compile(r"app: embedded mock LLM on (http://127\.0\.0\.1:\d+) ")


def start_demo(tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    """`python -m app` with nothing configured (the embedded demo), data under tmp_path
    (`env`: other settings, SG_DATA_DIR too)."""
    return subprocess.Popen(
        [sys.executable, "-m", "app", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(tmp_path, **{"SG_DATA_DIR": str(tmp_path / "data"), **env}),
    )


def chat_frames(page_url: str, body: dict[str, str]) -> list[dict[str, Any]]:
    """The SSE frames of one turn on the running app."""
    with httpx.stream("POST", f"{page_url}/api/chat", json=body, timeout=20) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return [json.loads(line[len("data: ") :]) for line in lines]
