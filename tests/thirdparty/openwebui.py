"""Open WebUI, the real one from PyPI, served offline against a model URL of the test's.

`serve_open_webui(connection, data_dir)` starts `open-webui serve` from its isolated venv
(tests/thirdparty/venvs.py) on a free loopback port and yields its URL once `/health`
answers. It runs as a person would run it at home, with what a test needs set and nothing
reaching out:

- one model connection, `Connection("ollama", URL)` (Open WebUI's default route: Ollama's
  native API) or `Connection("openai", URL/v1)`, and the other one off;
- no login (`WEBUI_AUTH=False`: the page signs in as its one admin), no telemetry, no
  update check, offline mode (no model downloads), an embedding engine that loads nothing
  at start;
- title, tag and follow-up generation left on (Open WebUI's defaults), so every turn makes
  its side calls too and the kit must tell them apart;
- the release notes dialog off, as an interface default (`DEFAULT_INTERFACE_SETTINGS`);
  reasoning is left collapsed, Open WebUI's default: the kit's profile turns the user's
  "expand details" setting on itself (conformance/profiles/openwebui.toml, `[[setup_once]]`).

`install_function(url, function_id, source)` adds a Function (our filter) the way the admin
page's "+ New Function" does, through Open WebUI's own API, then turns it on for every model.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..support.ports import free_port
from .health import stop, wait_healthy
from .venvs import OPEN_WEBUI

STARTUP_DEADLINE_S = 300.0
"""The longest Open WebUI may take to answer /health (30-60 s on a 2-core machine, several
minutes with the machine oversubscribed): a hang guard, not a timing claim."""
INTERFACE_DEFAULTS = {"showChangelog": False}


@dataclass(frozen=True)
class Connection:
    kind: Literal["ollama", "openai"]
    url: str  # Ollama's root (http://host:port), or an OpenAI base URL (.../v1)


def open_webui_env(connection: Connection, data_dir: Path) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(data_dir),
        "DATA_DIR": str(data_dir),
        "WEBUI_AUTH": "False",
        "WEBUI_SECRET_KEY": "scaffold-guard-test",
        "ENV": "prod",
        "OFFLINE_MODE": "True",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "DO_NOT_TRACK": "True",
        "SCARF_NO_ANALYTICS": "True",
        "ENABLE_VERSION_UPDATE_CHECK": "False",
        "RAG_EMBEDDING_ENGINE": "openai",  # nothing to load at start (unused: no documents)
        "DEFAULT_INTERFACE_SETTINGS": json.dumps(INTERFACE_DEFAULTS),
        "ENABLE_TITLE_GENERATION": "True",
        "ENABLE_TAGS_GENERATION": "True",
        "ENABLE_FOLLOW_UP_GENERATION": "True",
    }
    if connection.kind == "ollama":
        env |= {
            "ENABLE_OLLAMA_API": "True",
            "OLLAMA_BASE_URL": connection.url,
            "ENABLE_OPENAI_API": "False",
        }
    else:
        env |= {
            "ENABLE_OLLAMA_API": "False",
            "ENABLE_OPENAI_API": "True",
            "OPENAI_API_BASE_URL": connection.url,
            "OPENAI_API_KEY": "sk-open-webui-test",
        }
    return env


@contextmanager
def serve_open_webui(connection: Connection, data_dir: Path) -> Generator[str]:
    """Open WebUI on a free loopback port, wired to `connection`; its URL (no trailing /)."""
    venv = OPEN_WEBUI.ensure()
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = (data_dir / "open-webui.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [str(venv.bin("open-webui")), "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=data_dir,
        env=open_webui_env(connection, data_dir),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(f"{url}/health", process, data_dir / "open-webui.log",
                     deadline_s=STARTUP_DEADLINE_S, what="Open WebUI")  # fmt: skip
        yield url
    finally:
        stop(process)
        log.close()


def _api(url: str, path: str, body: object, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"{url}{path}", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        raise RuntimeError(f"Open WebUI {path} answered {exc.code}: {detail}") from exc


def admin_token(url: str) -> str:
    """A session token of the admin (with WEBUI_AUTH=False, sign-in needs no password)."""
    return str(_api(url, "/api/v1/auths/signin", {"email": "", "password": ""})["token"])


def install_function(url: str, function_id: str, source: str, name: str) -> None:
    """Add `source` as a Function, switch it on, and make it global (every model)."""
    token = admin_token(url)
    form = {"id": function_id, "name": name, "content": source,
            "meta": {"description": "scaffold-guard's filter"}}  # fmt: skip
    _api(url, "/api/v1/functions/create", form, token)
    for toggle in ("toggle", "toggle/global"):
        _api(url, f"/api/v1/functions/id/{function_id}/{toggle}", {}, token)
