"""`python -m mock_llm` as a user runs it: a real process, a startup line, a clean exit."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx

from ...support.deadlines import DEADLINE_S
from ...support.processes import child_env, mock_process


def test_module_serves_and_prints_its_url(tmp_path: Path):
    flows = tmp_path / "mine.yaml"
    flows.write_text("flows:\n  mine: {steps: [{content: from my file}]}\n", encoding="utf-8")
    with mock_process(tmp_path, "--flows", str(flows)) as mock:
        response = httpx.post(
            f"{mock.url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "[[mock:mine]]"}]},
            timeout=DEADLINE_S,
        )
        assert response.json()["choices"][0]["message"]["content"] == "from my file"
    # uvicorn re-raises the SIGTERM it handled once shut down, as a terminated process should
    assert mock.process.returncode in (0, -signal.SIGTERM), mock.stderr
    assert "Traceback" not in mock.stderr


def test_module_refuses_to_start_with_a_bad_flow_file(tmp_path: Path):
    flows = tmp_path / "bad.yaml"
    flows.write_text("flows:\n  x:\n    steps:\n      - delay_ms: soon\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mock_llm", "--port", "0", "--flows", str(flows)],
        capture_output=True,
        text=True,
        env=child_env(tmp_path),
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert f"{flows}:4" in done.stderr
    assert "'delay_ms' must be a number" in done.stderr
