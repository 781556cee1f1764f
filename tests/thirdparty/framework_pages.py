"""Chat pages written as the Python frameworks' tutorials write them, served by the framework.

Each page (tests/thirdparty/pages/) streams the OpenAI SDK's `delta.content` to the page as its
tutorial does, with the one line of docs/transport.md added: the client's `http_client` wraps
`GuardTransport`. Each framework is installed, pinned, into a venv of its own
(tests/thirdparty/venvs.py), and the project's wheel, built from the checkout once per run, is
installed into it as a user installs it (`pip install scaffold-guard`: the bare install, the
filter and the transport); nothing of the checkout is on the page's path. The kit then checks
the page against the mock with the page's profile (pages/<name>.toml).
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..conformance_selftest.kit_runs import ROOT
from ..support.ports import free_port
from .health import stop, wait_healthy
from .venvs import CHAINLIT, GRADIO, STREAMLIT, IsolatedVenv

PAGES = Path(__file__).resolve().parent / "pages"
STARTUP_DEADLINE_S = 120.0
"""A hang guard for a page's server to answer its health check, not a timing claim."""


@dataclass(frozen=True)
class FrameworkPage:
    """A page, the venv it runs in, how its framework serves it (`{port}` in its command is
    the port) and where it says it is up."""

    name: str
    venv: IsolatedVenv
    command: tuple[str, ...]
    """The command line after the venv's bin/ folder: its first word is a script there."""
    health: str

    @property
    def profile(self) -> Path:
        return PAGES / f"{self.name}.toml"

    @property
    def expected_failures(self) -> Path | None:
        """The kit's baseline of what the page as its tutorial writes it cannot pass."""
        path = PAGES / f"{self.name}-expected-failures.txt"
        return path if path.is_file() else None


PAGE_APPS = {
    page.name: page
    for page in (
        FrameworkPage(
            "streamlit",
            STREAMLIT,
            ("streamlit", "run", str(PAGES / "streamlit_chat.py"), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", "{port}",
             "--browser.gatherUsageStats", "false"),
            "/_stcore/health",
        ),
        FrameworkPage(
            "gradio",
            GRADIO,
            ("python", str(PAGES / "gradio_chat.py"), "{port}"),
            "/",
        ),
        FrameworkPage(
            "chainlit",
            CHAINLIT,
            ("chainlit", "run", str(PAGES / "chainlit_chat.py"), "--headless",
             "--host", "127.0.0.1", "--port", "{port}"),
            "/",
        ),
    )
}  # fmt: skip


@functools.cache
def built_wheel() -> Path:
    """The project's wheel, built from the checkout once per run."""
    out = Path(tempfile.mkdtemp(prefix="scaffold-guard-wheel-"))
    subprocess.run(
        ["uv", "build", "--quiet", "--wheel", "--out-dir", str(out), str(ROOT)],
        check=True,
        timeout=600,
    )
    [wheel] = out.glob("*.whl")
    return wheel


def with_wheel(venv: IsolatedVenv) -> IsolatedVenv:
    """`venv` (installed on first use) with this run's wheel in it: its dependencies as pip
    resolves them, then the wheel itself again, since its version number does not change."""
    venv = venv.ensure()
    pip = [str(venv.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    wheel = str(built_wheel())
    subprocess.run([*pip, wheel], check=True, timeout=600)
    subprocess.run([*pip, "--force-reinstall", "--no-deps", wheel], check=True, timeout=600)
    return venv


@contextmanager
def serve_page(page: FrameworkPage, model_url: str, logs: Path) -> Generator[str]:
    """The page served by its framework on a free loopback port, its model server at
    `model_url` (an OpenAI base URL); its URL (no trailing slash)."""
    venv = with_wheel(page.venv)
    port = free_port()
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{page.name}.log"
    env = {"PATH": f"{venv.home / 'bin'}:/usr/bin:/bin", "HOME": str(logs),
           "SG_MODEL_URL": model_url, "GRADIO_ANALYTICS_ENABLED": "False"}  # fmt: skip
    command = [str(venv.bin(page.command[0])), *(w.format(port=port) for w in page.command[1:])]
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(command, cwd=logs, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(f"{url}{page.health}", process, log_path,
                         deadline_s=STARTUP_DEADLINE_S, what=f"{page.name}'s server")  # fmt: skip
            yield url
        finally:
            stop(process)
