from __future__ import annotations

from pathlib import Path

import pytest

from mock_llm.cli import main, parse_args

from ..ports import taken_port


def test_defaults_are_loopback_8099_and_reasoning_content():
    args = parse_args([])
    assert (args.host, args.port, args.reasoning_field, args.flows) == (
        "127.0.0.1",
        8099,
        "reasoning_content",
        [],
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--journal-size", "0"], "--journal-size must be at least 1"),
        (["--max-body-bytes", "0"], "--max-body-bytes must be at least 1"),
        (["--journal-bytes", "0"], "--journal-bytes must be at least 1"),
        (["--quiet-reset", "-1"], "--quiet-reset must be 0 or more"),
        (["--reasoning-field", "thoughts"], "invalid choice"),
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
