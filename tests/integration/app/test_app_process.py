"""`python -m app` as a user runs it: the embedded demo answers a real question."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from scaffold_guard.app.cli import main
from scaffold_guard.app.errors import SERVER_STOPPING

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal_sync
from ...support.ports import taken_port
from ...support.processes import child_env, first_lines
from ..helpers.app_process import MOCK, PAGE, chat_frames, start_demo


def test_embedded_demo_serves_a_grounded_turn_and_prints_both_urls(tmp_path: Path):
    process = start_demo(tmp_path)
    try:
        page_line, mock_line = first_lines(process, 2)
        page, mock = PAGE.match(page_line), MOCK.match(mock_line)
        assert page, page_line
        assert mock, mock_line
        body = {"message": "When do backups run? [[mock:tool-then-answer#demo]]"}
        frames = chat_frames(page.group(1), body)
        assert frames[0]["mode"] == "grounded"
        assert frames[-1]["type"] == "done"
        assert len(settled_journal_sync(mock.group(1), "demo", count=2)) == 2
        demo = httpx.get(f"{page.group(1)}/api/info", timeout=20).json()["demo"]
        assert demo["journal_url"] == f"{mock.group(1)}/_mock/requests"  # the banner shows
        assert (tmp_path / "data" / "scaffold-guard.sqlite3").is_file()
        assert "chat turn=" in (tmp_path / "data" / "chat.log").read_text(encoding="utf-8")
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    assert "Traceback" not in err


def test_the_embedded_demo_answers_a_plain_question_from_the_notes(tmp_path: Path):
    process = start_demo(tmp_path)
    try:
        page = PAGE.match(first_lines(process, 2)[0])
        assert page
        body = {"message": "When do backups run?"}
        frames = chat_frames(page.group(1), body)
        answer = "".join(f["text"] for f in frames if f["type"] == "delta")
        assert answer.startswith("From your notes:\n- Backups run nightly at 02:00"), answer
        assert "(source: /homelab/backups.md)" in answer
        [tool] = [f for f in frames if f["type"] == "tool"]  # the question names backups.md
        assert (tool["name"], tool["path"], tool["ok"]) == ("read", "/homelab/backups.md", True)
        assert frames[-1]["type"] == "done"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    assert "Traceback" not in err


def test_a_shutdown_ends_an_open_stream_at_once_with_an_error_frame(tmp_path: Path):
    """Regression: with its own response (no sse-starlette), a turn streaming during a
    shutdown was cut after uvicorn's graceful timeout, with a traceback."""
    process = start_demo(tmp_path)
    try:
        page = PAGE.match(first_lines(process, 2)[0])
        assert page
        body = {"message": "When do backups run? [[mock:stall#shutdown]]"}  # silent for 30 s
        frames: list[dict[str, Any]] = []
        with httpx.stream("POST", f"{page.group(1)}/api/chat", json=body, timeout=20) as reply:
            for line in reply.iter_lines():
                if not line.startswith("data: "):
                    continue
                frames.append(json.loads(line[len("data: ") :]))
                if frames[-1]["type"] == "delta":
                    process.send_signal(signal.SIGTERM)  # mid-answer, the model silent
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    assert frames[-1] == {"type": "error", "turn": frames[0]["turn"], "detail": SERVER_STOPPING}
    assert [f["type"] for f in frames].count("error") == 1
    assert "Traceback" not in err
    assert "without completing response" not in err


def test_invalid_settings_stop_the_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("SG_LLM_TIMEOUT_S", "never")
    monkeypatch.setenv("SG_AGENT_TOOLS", "sometimes")
    assert main(["--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "SG_LLM_TIMEOUT_S='never'" in err
    assert "SG_AGENT_TOOLS='sometimes'" in err


def test_port_in_use_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("SG_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SG_DATA_DIR", str(tmp_path))
    with taken_port() as port:
        assert main(["--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_the_installed_command_runs_the_app_as_its_app_subcommand(tmp_path: Path):
    """The `scaffold-guard` console script (the project's entry point, installed with it)."""
    command = Path(sys.executable).with_name("scaffold-guard")
    done = subprocess.run(
        [str(command), "app", "--help"],
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: scaffold-guard app ")
