"""`python -m mock_llm record` as a user runs it: a process in front of the mock, a startup
line, a line per recorded answer, a file that `python -m mock_llm --flows` replays."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from mock_llm import load_flow_file

from ...support.deadlines import DEADLINE_S
from ...support.processes import child_env, first_lines, mock_process

RECORDER_STARTUP = re.compile(
    r"mock_llm record: recording (\S+) on (http://127\.0\.0\.1:\d+) \(OpenAI base URL \S+\) "
    r"into (.+)$"
)


def chat(url: str, text: str, stream: bool = False) -> httpx.Response:
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}]}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=DEADLINE_S)


def test_record_as_a_process_then_replay_as_a_process(mock_url: str, tmp_path: Path, key: str):
    out = tmp_path / "recorded.yaml"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mock_llm",
            "record",
            "--upstream",
            f"{mock_url}/v1",
            "--out",
            str(out),
            "--port",
            "0",
            "--redact",
            "restic",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(tmp_path),
    )
    try:
        [line] = first_lines(process, 1)
        match = RECORDER_STARTUP.match(line.strip())
        assert match, line
        assert (match[1], match[3]) == (f"{mock_url}/v1", str(out))
        direct = chat(mock_url, f"[[mock:clean#{key}-d]]", stream=True)
        through = chat(match[2], f"[[mock:clean#{key}]]", stream=True)
        assert through.status_code == 200
        assert through.text.count("data: ") == direct.text.count("data: ")
        [recorded] = first_lines(process, 1)
        assert recorded.startswith("mock_llm record: clean step 1: ")
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=DEADLINE_S)
    assert process.returncode in (0, -signal.SIGTERM), stderr
    assert "Traceback" not in stderr
    assert "restic" not in out.read_text(encoding="utf-8")
    step = load_flow_file(out)["clean"].steps[0]
    assert "[REDACTED]" in step.content
    with mock_process(tmp_path, "--flows", str(out), "--replay-pacing", "none") as mock:
        replayed = chat(mock.url, f"[[mock:clean#{key}]]")
    assert replayed.json()["choices"][0]["message"]["content"] == step.content


def test_record_refuses_to_start_with_a_bad_redaction_pattern(tmp_path: Path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mock_llm",
            "record",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--out",
            str(tmp_path / "r.yaml"),
            "--redact",
            "key-(",
        ],
        capture_output=True,
        text=True,
        env=child_env(tmp_path),
        timeout=DEADLINE_S,
        check=False,
    )
    assert done.returncode == 2
    assert "mock_llm record: --redact: 'key-(' is not a valid regular expression" in done.stderr
