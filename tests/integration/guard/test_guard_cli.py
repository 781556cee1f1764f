"""`python -m guard` as a user runs it: a real process in front of the mock."""

from __future__ import annotations

import re
import signal
import socket
from pathlib import Path

import httpx
import pytest

from guard import cli
from guard.cli import CLIENT_KEEPALIVE_S, main, server_config, upstream_root
from guard.http.server import GuardSettings, create_app

from ...support.deadlines import DEADLINE_S
from ...support.ports import taken_port
from ...support.processes import guard_process

AIOHTTP_IDLE_S = 15.0
"""aiohttp's documented default `keepalive_timeout` (Open WebUI's pool)."""
STARTED = re.compile(r"guard: proxy on (http://127\.0\.0\.1:\d+)/v1 for (\S+)")


@pytest.mark.parametrize("server", ["uvicorn", "asyncio"])
def test_the_proxy_serves_a_guarded_answer_and_stops_cleanly(
    tmp_path: Path, mock_url: str, server: str
):
    with guard_process(tmp_path, "--upstream", f"{mock_url}/v1", "--server", server) as guard:
        started = STARTED.match(guard.line)
        assert started
        assert started.group(2) == mock_url  # the root: the client's /v1 path is kept
        message = "When do backups run? [[mock:scaffold-recover#guard-cli-" + server + "]]"
        reply = httpx.post(
            f"{started.group(1)}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": message}]},
            timeout=DEADLINE_S,
        )
        assert reply.json()["choices"][0]["message"]["content"].startswith("Backups run nightly")
    assert guard.process.returncode in (0, -signal.SIGTERM), guard.stderr
    assert "Traceback" not in guard.stderr
    assert re.search(r"guard: chat status=200 stream=false retries=1 .*request_id=", guard.stderr)
    assert "agent: stripped 97 chars of tool-scaffolding in round 1" in guard.stderr


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--upstream", "ftp://x"], "--upstream must be an http(s) URL"),
        (["--upstream", "http://127.0.0.1:9/v1", "--profiles", "nope"], "unknown profile(s) nope"),
        (["--upstream", "http://127.0.0.1:9/v1", "--keepalive-s", "0"], "more than 0"),
        (
            ["--upstream", "http://127.0.0.1:9/v1", "--upstream-idle-s", "nan"],
            "--upstream-idle-s must be more than 0",
        ),
    ],
    ids=["not-http", "unknown-profile", "no-keepalive", "no-idle-time"],
)
def test_bad_arguments_stop_the_start(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
):
    assert main([*argv, "--port", "0"]) == 2
    assert complaint in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "root"),
    [
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://llm.lan/openai/v1", "https://llm.lan/openai"),
        ("llm.lan:8080", None),
    ],
)
def test_the_upstream_is_taken_at_its_root(given: str, root: str | None):
    assert upstream_root(given) == root


def test_a_taken_port_stops_the_start(capsys: pytest.CaptureFixture[str]):
    with taken_port() as port:
        assert main(["--upstream", "http://127.0.0.1:9/v1", "--port", str(port)]) == 2
    assert f"guard: cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_the_proxy_keeps_a_clients_idle_connection_longer_than_common_client_pools_do():
    """Regression (issue 29, one hop earlier): uvicorn's 5 s keep-alive closed connections that
    aiohttp (Open WebUI; 15 s idle) and httpx (the openai SDK) clients still held in their
    pools."""
    config = server_config(create_app(GuardSettings(upstream="http://127.0.0.1:9")))
    httpx_idle = httpx.Limits(max_connections=None).keepalive_expiry
    assert config.timeout_keep_alive == CLIENT_KEEPALIVE_S
    assert httpx_idle is not None
    assert config.timeout_keep_alive > max(httpx_idle, AIOHTTP_IDLE_S)


def test_a_bare_install_is_served_by_the_asyncio_server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cli, "full_stack_installed", lambda: False)
    with socket.socket() as sock:
        serve = cli.chosen_server("auto", sock, GuardSettings(upstream="http://127.0.0.1:9"))
    assert serve.func.__module__ == "guard.bare.server"


def test_the_uvicorn_server_without_the_proxy_extra_is_refused_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setattr(cli, "full_stack_installed", lambda: False)
    assert main(["--upstream", "http://127.0.0.1:9/v1", "--server", "uvicorn", "--port", "0"]) == 2
    assert "pip install 'scaffold-guard[proxy]'" in capsys.readouterr().err
