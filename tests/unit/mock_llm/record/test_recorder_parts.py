"""The recorder's pure parts and its command line: upstream URLs, headers, the file, and
the start-up errors of `python -m mock_llm record` (and the mock's `--replay-pacing`)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from mock_llm.cli import main, parse_args, parse_record_args
from mock_llm.flows.flow_file import load_flow_file
from mock_llm.flows.flow_writer import dump_flows
from mock_llm.flows.model import Flow, Step
from mock_llm.record.recorder import (
    Upstream,
    UpstreamError,
    _upstream_headers,
    load_recording,
    narrow_accept_encoding,
    secret_values,
    write_atomically,
)

from ....support.ports import taken_port


def test_an_upstream_is_shown_without_userinfo_or_query():
    upstream = Upstream.parse("https://user:pw@example.test:8443/v1/?api-version=2")
    assert upstream.display == "https://example.test:8443/v1"
    assert upstream.url == "https://user:pw@example.test:8443/v1?api-version=2"


@pytest.mark.parametrize(
    ("path", "query", "target"),
    [
        ("/v1/chat/completions", "", "http://h:1/v1/chat/completions"),
        ("/chat/completions", "", "http://h:1/v1/chat/completions"),
        ("/v1/models", "a=1", "http://h:1/v1/models?a=1"),
        ("/v1", "", "http://h:1/v1"),
        ("/v10/x", "", "http://h:1/v1/v10/x"),
        ("/api/chat", "", "http://h:1/api/chat"),
        ("/api/tags", "a=1", "http://h:1/api/tags?a=1"),
        ("/apix", "", "http://h:1/v1/apix"),
    ],
)
def test_requests_go_to_the_base_url(path: str, query: str, target: str):
    assert Upstream.parse("http://h:1/v1/").target(path, query) == target


@pytest.mark.parametrize(
    ("base", "target"),
    [
        ("http://h:11434", "http://h:11434/api/chat"),
        ("http://h:11434/v1", "http://h:11434/api/chat"),
        ("http://h/ollama/v1", "http://h/ollama/api/chat"),
    ],
)
def test_ollamas_native_api_goes_to_the_base_url_without_its_v1(base: str, target: str):
    assert Upstream.parse(base).target("/api/chat", "") == target


def test_the_base_urls_query_is_kept_for_every_request():
    upstream = Upstream.parse("http://h/openai?api-version=2")
    assert upstream.target("/v1/chat/completions", "x=1") == (
        "http://h/openai/chat/completions?api-version=2&x=1"
    )


@pytest.mark.parametrize("url", ["ftp://h/v1", "h:8080/v1", "http:///v1", ""])
def test_an_upstream_must_be_an_http_url(url: str):
    with pytest.raises(UpstreamError, match="http"):
        Upstream.parse(url)


def test_hop_by_hop_headers_stay_and_the_rest_goes_upstream():
    headers = [
        ("Host", "recorder:8097"),
        ("Content-Length", "12"),
        ("Connection", "keep-alive, X-Private"),
        ("X-Private", "p"),
        ("Keep-Alive", "timeout=5"),
        ("Proxy-Authorization", "Basic eA=="),
        ("Authorization", "Bearer sk-1"),
        ("Accept-Encoding", "gzip, br;q=0.9, zstd, deflate"),
        ("X-Trace", "t"),
    ]
    assert _upstream_headers(headers) == [
        ("Authorization", "Bearer sk-1"),
        ("Accept-Encoding", "gzip, deflate"),
        ("X-Trace", "t"),
    ]
    assert narrow_accept_encoding("br, *") == "identity"


def test_the_secrets_of_a_request_are_its_key_headers_values_and_tokens():
    headers = [("Authorization", "Bearer sk-abc"), ("api-key", "k-2"), ("X-Other", "o")]
    assert secret_values(headers) == ["Bearer sk-abc", "sk-abc", "k-2"]


@pytest.mark.parametrize("name", ["rec.yaml", "rec.yaml.gz"])
def test_the_file_is_replaced_whole_and_read_back(tmp_path: Path, name: str):
    path = tmp_path / name
    for content in ("first", "second"):
        write_atomically(path, dump_flows([Flow("f", "", (Step(content=content),))]))
        assert load_flow_file(path)["f"].steps[0].content == content
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left
    if name.endswith(".gz"):
        assert gzip.decompress(path.read_bytes()).startswith(b"flows:")
    assert list(load_recording(path).flows) == ["f"]
    assert load_recording(tmp_path / "new.yaml").flows == {}


# --- the command lines ------------------------------------------------------------------


def test_record_defaults():
    args = parse_record_args(["--upstream", "http://h/v1", "--out", "r.yaml"])
    assert (args.host, args.port, args.redact) == ("127.0.0.1", 8097, [])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--upstream", "nope"], "mock_llm record: --upstream: expected an http(s) base URL"),
        (["--redact", "sk-("], "mock_llm record: --redact: 'sk-(' is not a valid regular"),
        (["--redact", ".*"], "matches the empty text"),
    ],
)
def test_record_refuses_to_start_on_a_bad_option(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
):
    base = ["record", "--upstream", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "r.yaml")]
    assert main([*base, *argv, "--port", "0"]) == 2
    assert message in capsys.readouterr().err


def test_record_refuses_a_folder_it_cannot_write_or_a_file_that_is_no_flow_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    upstream = ["record", "--upstream", "http://127.0.0.1:9/v1", "--port", "0"]
    assert main([*upstream, "--out", str(tmp_path / "missing" / "r.yaml")]) == 2
    assert "cannot write into the folder" in capsys.readouterr().err
    bad = tmp_path / "r.yaml"
    bad.write_text("flows: 5\n", encoding="utf-8")
    assert main([*upstream, "--out", str(bad)]) == 2
    assert f"the existing file is not a flow file: {bad}:1" in capsys.readouterr().err


def test_record_reports_a_port_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    with taken_port() as port:
        argv = ["record", "--upstream", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "r")]
        assert main([*argv, "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_replay_pacing_is_an_option_of_the_mock(capsys: pytest.CaptureFixture[str]):
    assert parse_args([]).replay_pacing == 1.0
    assert parse_args(["--replay-pacing", "none"]).replay_pacing == 0.0
    assert parse_args(["--replay-pacing", "0.5"]).replay_pacing == 0.5
    with pytest.raises(SystemExit):
        parse_args(["--replay-pacing", "fast"])
    assert "expected real, none or a positive number" in capsys.readouterr().err
