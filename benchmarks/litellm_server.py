"""LiteLLM's proxy as a benchmark server: the same streams passed through, plainly.

The pinned isolated venv and the way it is started are the third-party suite's
(tests/thirdparty/venvs.py, tests/thirdparty/litellm_proxy.py), imported from there so the
two never drift: LiteLLM is never a dependency of this project. The config is the shipped
example's model (scaffold_guard/integrations/litellm/config.yaml) pointed at the upstream and named
as the benchmark's requests name it, without the guardrail: LiteLLM only passes the streams on.
A venv that cannot be built raises (`LiteLLMUnavailable`): the benchmark says so and fails.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from servers import RunningServer, ServerSpec

from tests.thirdparty.litellm_proxy import (
    MASTER_KEY,
    RUN_SERVER,
    proxy_env,
    shipped_config,
    without_guardrails,
)
from tests.thirdparty.venvs import LITELLM, LITELLM_VERSION

AUTHORIZATION = f"Authorization: Bearer {MASTER_KEY}\r\n"
"""The header line every request to LiteLLM's proxy carries (it refuses one without)."""


class LiteLLMUnavailable(RuntimeError):
    """LiteLLM's isolated venv could not be built (no registry, a failed install)."""


def litellm_venv_python() -> Path:
    """The isolated venv's python, built on first use (minutes, once per machine)."""
    try:
        return LITELLM.ensure().python
    except (OSError, subprocess.SubprocessError) as exc:
        raise LiteLLMUnavailable(
            f"LiteLLM {LITELLM_VERSION}'s venv under {LITELLM.home} could not be built ({exc})"
        ) from exc


def litellm_spec(
    python: Path, upstream: RunningServer, model: str, folder: Path, port: int
) -> ServerSpec:
    """`litellm --config ...` from the venv's `python`, serving `model` from `upstream`'s
    OpenAI-compatible API, its config and home in `folder`."""
    config = without_guardrails(shipped_config(f"{upstream.base_url}/v1"))
    config["model_list"][0]["model_name"] = model
    config["model_list"][0]["litellm_params"]["model"] = f"openai/{model}"
    home = folder / "litellm-home"
    home.mkdir(parents=True, exist_ok=True)
    config_file = home / "config.yaml"
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    argv = [str(python), "-c", RUN_SERVER, "--config", str(config_file),
            "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    return ServerSpec("litellm", argv, proxy_env(home), home, "/health/liveliness")
