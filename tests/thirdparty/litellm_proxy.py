"""LiteLLM's proxy, the real one from PyPI, served against the mock with a config of the test's.

`serve_litellm_proxies(configs, workdir)` starts one `litellm --config ...` per config from
the isolated venv (tests/thirdparty/venvs.py), all at once (each takes 30-45 s to start on
a 2-core machine, so they start side by side), each on a free loopback port, and yields
their URLs once every one answers `/health/liveliness`. Each runs as a person runs it from
the shipped example (scaffold_guard/integrations/litellm/config.yaml): the repository on PYTHONPATH
so the config's `guardrail: scaffold_guard.integrations.litellm_guardrail.ScaffoldGuardrail`
imports, a master key (the proxy refuses to start without one), the model cost map read from the
copy LiteLLM ships (it would fetch it from GitHub), `--host 127.0.0.1` (it listens on 0.0.0.0
otherwise). Its output goes to `<name>.log` in `workdir`, unbuffered, for the tests to read.

`shipped_config(model_base_url)` is that example with its model pointed at a URL of the
test's, and `without_guardrails` the same with the guardrail taken out (the negative control).
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Generator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import yaml

from ..support.ports import free_port
from .venvs import LITELLM

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "scaffold_guard" / "integrations" / "litellm" / "config.yaml"
MASTER_KEY = "sk-scaffold-guard-test"
RUN_SERVER = "import sys; from litellm import run_server; sys.exit(run_server())"
"""What the venv's `litellm` script runs, run by the venv's own python: a venv built in one
folder and moved keeps the old folder's python in its scripts' first line."""
STARTUP_DEADLINE_S = 180.0
"""The longest LiteLLM's proxy may take to answer /health/liveliness (30-45 s on a 2-core
machine, more with the machine oversubscribed): a hang guard, not a timing claim."""


def shipped_config(model_base_url: str) -> dict[str, Any]:
    """scaffold_guard/integrations/litellm/config.yaml with its one model at `model_base_url`
    (…/v1)."""
    config: dict[str, Any] = yaml.safe_load(SHIPPED_CONFIG.read_text(encoding="utf-8"))
    config["model_list"][0]["litellm_params"]["api_base"] = model_base_url
    return config


def without_guardrails(config: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in config.items() if key != "guardrails"}


def proxy_env(home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


@contextmanager
def serve_litellm_proxies(
    configs: Mapping[str, Mapping[str, Any]], workdir: Path
) -> Generator[dict[str, str]]:
    """One proxy per named config; their URLs (no trailing /) by name, once all are up."""
    venv = LITELLM.ensure()
    with ExitStack() as stack:
        started: dict[str, tuple[str, subprocess.Popen[bytes], Path]] = {}
        for name, config in configs.items():
            home = workdir / name
            home.mkdir(parents=True, exist_ok=True)
            config_file = home / "config.yaml"
            config_file.write_text(yaml.safe_dump(dict(config)), encoding="utf-8")
            log_path = home / f"{name}.log"
            log = stack.enter_context(log_path.open("w", encoding="utf-8"))
            port = free_port()
            process = subprocess.Popen(
                [str(venv.python), "-c", RUN_SERVER, "--config", str(config_file),
                 "--host", "127.0.0.1", "--port", str(port)],
                cwd=home,
                env=proxy_env(home),
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
            stack.callback(_stop, process)
            started[name] = (f"http://127.0.0.1:{port}", process, log_path)
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        for url, process, log_path in started.values():
            _wait_live(url, process, log_path, deadline)
        yield {name: url for name, (url, _, _) in started.items()}


def log_of(workdir: Path, name: str) -> str:
    return (workdir / name / f"{name}.log").read_text(encoding="utf-8", errors="replace")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_live(url: str, process: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
            raise RuntimeError(f"LiteLLM's proxy exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{url}/health/liveliness", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
    raise RuntimeError(f"LiteLLM's proxy did not come up in {STARTUP_DEADLINE_S:g} s:\n{tail}")
