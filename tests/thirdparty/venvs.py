"""Third-party apps in virtual environments of their own, cached outside the repository.

Open WebUI and LiteLLM's proxy are real programs a user runs in front of a model, Streamlit
and Gradio the frameworks a user writes a chat page with; the third-party suite
(tests/thirdparty) starts them against the mock and the guard. They are
never dependencies of this project: each is installed, pinned, into its own venv under
`$XDG_CACHE_HOME/scaffold-guard-thirdparty/<name>` on first use (minutes, once per machine)
and reused after that; the folder holds a stamp of what was asked for, so a changed pin
installs anew.

Deliberate choices:
- pip, not uv, installs into these venvs: the machine image keeps a CPU build of torch on
  disk where pip finds it (`pip install torch==2.13.0`), and Open WebUI pulls torch in;
  uv would download a CUDA build of several GB.
- The project itself (its `guardrail`, `scaffold_guard.integrations` and `guard` packages) is
  never installed there: a test puts the repository on the child's PYTHONPATH when the
  third-party program must import one of our adapters, as a user's install would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .llama_build import LLAMA_SERVER, LlamaServerBuild

INSTALL_TIMEOUT_S = 3600.0
"""A hang guard for one install (Open WebUI's takes 5-10 minutes on a 2-core machine)."""


@dataclass(frozen=True)
class IsolatedVenv:
    """A pinned third-party install: `steps` are pip install argument lists, in order."""

    name: str
    steps: tuple[tuple[str, ...], ...]

    @property
    def home(self) -> Path:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cache / "scaffold-guard-thirdparty" / self.name

    @property
    def python(self) -> Path:
        return self.home / "bin" / "python"

    def bin(self, script: str) -> Path:
        return self.home / "bin" / script

    def _stamp(self) -> str:
        return json.dumps({"steps": self.steps, "python": sys.version.split()[0]})

    def ensure(self) -> IsolatedVenv:
        """Install on first use (or when the pins changed); afterwards a no-op."""
        stamp = self.home / "scaffold-guard-stamp.json"
        if self.python.is_file() and stamp.is_file() and stamp.read_text() == self._stamp():
            return self
        self.home.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "venv", "--clear", str(self.home)],
            check=True,
            timeout=INSTALL_TIMEOUT_S,
        )
        for step in self.steps:
            subprocess.run(
                [str(self.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 *step],
                check=True,
                timeout=INSTALL_TIMEOUT_S,
            )  # fmt: skip
        stamp.write_text(self._stamp())
        return self


OPEN_WEBUI_VERSION = "0.12.4"
OPEN_WEBUI = IsolatedVenv(
    f"open-webui-{OPEN_WEBUI_VERSION}",
    (("torch==2.13.0",), (f"open-webui=={OPEN_WEBUI_VERSION}",)),
)
LITELLM_VERSION = "1.108.7"
"""From 1.108.8 the proxy needs a `litellm-proxy` package the registry here does not have."""
LITELLM = IsolatedVenv(f"litellm-{LITELLM_VERSION}", ((f"litellm[proxy]=={LITELLM_VERSION}",),))

OPENAI_PIN = "openai==3.63.0"
"""The OpenAI SDK the framework pages stream with (tests/thirdparty/framework_pages.py)."""
STREAMLIT = IsolatedVenv("streamlit-1.67.0", (("streamlit==1.67.0", OPENAI_PIN),))
GRADIO = IsolatedVenv("gradio-6.31.0", (("gradio==6.31.0", OPENAI_PIN),))
CHAINLIT = IsolatedVenv("chainlit-2.12.0", (("chainlit==2.12.0", OPENAI_PIN),))

BY_NAME: dict[str, IsolatedVenv | LlamaServerBuild] = {
    "open-webui": OPEN_WEBUI,
    "litellm": LITELLM,
    "streamlit": STREAMLIT,
    "gradio": GRADIO,
    "chainlit": CHAINLIT,
    "llama-server": LLAMA_SERVER,  # a build, not a venv: tests/thirdparty/llama_build.py
}


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.thirdparty.venvs NAME...`: install (or find) those venvs, or build
    llama-server, now, so a test's own time limit never has to cover a first install."""
    names = sys.argv[1:] if argv is None else argv
    unknown = [name for name in names if name not in BY_NAME]
    if not names or unknown:
        print(
            f"usage: python -m tests.thirdparty.venvs {{{','.join(BY_NAME)}}}...", file=sys.stderr
        )
        return 2
    for name in names:
        print(f"{name}: {BY_NAME[name].ensure().home}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
