"""The command lines of both servers: options, start-up errors, and binding loopback by
default with a warning on stderr for any other address."""

from __future__ import annotations

from pathlib import Path

import pytest

from mock_llm.cli import main, parse_args
from scaffold_guard.app.cli import main as app_main
from servekit.listen import exposure_warning, is_loopback

from ...support.ports import taken_port


def test_defaults_are_loopback_8099_and_reasoning_content():
    args = parse_args([])
    assert (args.host, args.port, args.reasoning_field, args.flows) == (
        "127.0.0.1",
        8099,
        "reasoning_content",
        [],
    )


def test_allowed_hosts_default_to_the_environments(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SG_ALLOWED_HOSTS", "notes.lan,.lan")
    assert parse_args([]).allowed_hosts == ("notes.lan", ".lan")
    assert parse_args(["--allowed-hosts", "box"]).allowed_hosts == ("box",)


def test_a_bad_allowed_host_from_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("SG_ALLOWED_HOSTS", "a/b")
    with pytest.raises(SystemExit):
        parse_args([])
    assert "SG_ALLOWED_HOSTS" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--journal-size", "0"], "--journal-size must be at least 1"),
        (["--max-body-bytes", "0"], "--max-body-bytes must be at least 1"),
        (["--journal-bytes", "0"], "--journal-bytes must be at least 1"),
        (["--quiet-reset", "-1"], "--quiet-reset must be 0 or more"),
        (["--reasoning-field", "thoughts"], "invalid choice"),
        (["--allowed-hosts", "box.lan:80"], "'box.lan:80' is not a host name"),
    ],
)
def test_bad_options_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


def test_bad_flow_file_stops_the_start_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    path = tmp_path / "flows.yaml"
    path.write_text("flows:\n  f:\n    steps:\n      - chunking: lines\n", encoding="utf-8")
    assert main(["--flows", str(path), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4" in err
    assert "'chunking' must be" in err


def test_port_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]):
    with taken_port() as port:
        assert main(["--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


# --- binding beyond loopback: both servers warn (issue 12) -------------------------------

UNBINDABLE = "192.0.2.1"
"""TEST-NET-1 (RFC 5737): never an address of this machine, so binding it always fails
after the warning, and no test ever listens beyond loopback."""


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_hosts_get_no_warning(host: str):
    assert is_loopback(host)
    assert exposure_warning("mock_llm", host, "use it") is None


@pytest.mark.parametrize(
    ("host", "where"),
    [
        ("0.0.0.0", "every interface (0.0.0.0)"),
        ("::", "every interface (::)"),
        ("", "every interface (all)"),
        ("192.168.1.5", "192.168.1.5"),
        ("notes.example.org", "notes.example.org"),
    ],
)
def test_any_other_host_gets_a_warning_naming_where_it_listens(host: str, where: str):
    warning = exposure_warning("app", host, "ask about your notes")
    assert warning is not None
    assert f"app: warning: listening on {where}, not on loopback only" in warning
    assert "anyone who can reach this machine can ask about your notes" in warning


def test_the_mock_warns_on_stderr_when_told_to_listen_beyond_loopback(
    capsys: pytest.CaptureFixture[str],
):
    assert main(["--host", UNBINDABLE, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"mock_llm: warning: listening on {UNBINDABLE}, not on loopback only" in err
    assert f"cannot listen on {UNBINDABLE}:0" in err


def test_the_mock_says_nothing_of_the_kind_on_loopback(capsys: pytest.CaptureFixture[str]):
    with taken_port() as port:
        assert main(["--port", str(port)]) == 2
    assert "warning" not in capsys.readouterr().err


@pytest.fixture
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model configured (so no embedded mock starts) and a data folder of the test's own."""
    monkeypatch.setenv("SG_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SG_DATA_DIR", str(tmp_path / "data"))


@pytest.mark.usefixtures("app_env")
def test_the_app_binds_loopback_by_default_without_a_warning(capsys: pytest.CaptureFixture[str]):
    with taken_port() as port:
        assert app_main(["--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "warning" not in err


@pytest.mark.usefixtures("app_env")
def test_the_app_warns_on_stderr_when_told_to_listen_beyond_loopback(
    capsys: pytest.CaptureFixture[str],
):
    assert app_main(["--host", UNBINDABLE, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"app: warning: listening on {UNBINDABLE}, not on loopback only" in err
    assert "read the chat history; there is no login" in err
