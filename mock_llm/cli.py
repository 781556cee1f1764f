"""`python -m mock_llm`: the command line. Loopback by default, with a warning on stderr when
told to listen anywhere else (`servekit.listen`, shared with `python -m app` and `python -m
guard`); a bad flow file or side-call rule stops the start.

`python -m mock_llm record --upstream URL --out FILE` (the first word `record`) runs the
recording proxy instead (mock_llm/record/recorder.py); a bad upstream URL, `--redact` pattern or
existing recording stops its start the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import uvicorn

from mock_llm.flows.chunking import REAL_PACING, parse_pacing
from mock_llm.flows.flow_file import FlowFileError
from mock_llm.flows.model import DIALECTS, REASONING_FIELDS, Dialect, ReasoningField
from mock_llm.journal.store import DEFAULT_CAPACITY, DEFAULT_MAX_HELD_BYTES
from mock_llm.play.side_calls import SideCallsRefused
from mock_llm.play.turns import DEFAULT_QUIET_RESET_S
from mock_llm.record.recorder import DEFAULT_PORT as RECORDER_PORT
from mock_llm.record.recorder import (
    Recorder,
    RecorderSettings,
    Upstream,
    UpstreamError,
    load_recording,
    recorder_config,
)
from mock_llm.record.redaction import RedactionError, Redactor, compile_patterns
from mock_llm.server.runner import build_settings, uvicorn_config
from servekit.allowed_hosts import HostPolicy
from servekit.limits import DEFAULT_MAX_BODY_BYTES
from servekit.listen import add_listen_options, listen, socket_url


def parse_args(
    argv: Sequence[str] | None = None, prog: str = "python -m mock_llm"
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="An OpenAI-compatible mock LLM server driven by [[mock:FLOW#KEY]] triggers.",
    )
    add_listen_options(parser, 8099)
    parser.add_argument(
        "--flows", nargs="+", default=[], metavar="FILE", help="YAML flow files to add"
    )
    parser.add_argument(
        "--reasoning-field",
        choices=REASONING_FIELDS,
        default="reasoning_content",
        help="delta field that carries reasoning (default: reasoning_content)",
    )
    parser.add_argument(
        "--dialect",
        choices=DIALECTS,
        default="openai",
        help="how chat completions are framed where a flow's step does not say: as OpenAI's"
        " API (default) or as llama.cpp's llama-server",
    )
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    parser.add_argument(
        "--journal-size", type=int, default=DEFAULT_CAPACITY, help="journal entries kept"
    )
    parser.add_argument(
        "--journal-bytes",
        type=int,
        default=DEFAULT_MAX_HELD_BYTES,
        help="request-body bytes the journal keeps in all",
    )
    parser.add_argument(
        "--quiet-reset",
        type=float,
        default=DEFAULT_QUIET_RESET_S,
        metavar="SECONDS",
        help="a keyless turn starts over after this long without a request",
    )
    parser.add_argument(
        "--side-call",
        action="append",
        default=[],
        metavar="REGEX",
        dest="side_calls",
        help="a request whose system or last user message this matches is a side call "
        "(a title, tags...): it never advances a turn (repeatable)",
    )
    parser.add_argument(
        "--replay-pacing",
        type=_pacing,
        default=REAL_PACING,
        metavar="real|none|FACTOR",
        help="the gaps of recorded flows: as recorded (real, the default), none, or each "
        "multiplied by FACTOR (0.5 = twice as fast)",
    )
    parser.add_argument("--access-log", action="store_true", help="log every HTTP request")
    args = parser.parse_args(argv)
    for name in ("max_body_bytes", "journal_size", "journal_bytes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.quiet_reset < 0:
        parser.error("--quiet-reset must be 0 or more")
    return args


def _pacing(text: str) -> float:
    try:
        return parse_pacing(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m mock_llm") -> int:
    """`python -m mock_llm [options]` serves the mock; `python -m mock_llm record ...`
    records an upstream's answers as flows (mock_llm.record.recorder)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["record"]:
        return record_main(argv[1:], prog=f"{prog} record")
    args = parse_args(argv, prog)
    try:
        settings = build_settings(
            tuple(args.flows),
            reasoning_field=cast(ReasoningField, args.reasoning_field),
            dialect=cast(Dialect, args.dialect),
            max_body_bytes=args.max_body_bytes,
            journal_capacity=args.journal_size,
            journal_max_body_bytes=args.journal_bytes,
            quiet_reset_s=args.quiet_reset,
            side_calls=args.side_calls,
            replay_pacing=args.replay_pacing,
            hosts=HostPolicy.of(args.allowed_hosts, args.host),
        )
    except FlowFileError as exc:
        print(f"mock_llm: bad flow file: {exc}", file=sys.stderr)
        return 2
    except SideCallsRefused as exc:
        print(f"mock_llm: --side-call: {exc.message}", file=sys.stderr)
        return 2
    sock = listen("mock_llm", args.host, args.port, "use this mock and read its journal")
    if sock is None:
        return 2
    url = socket_url(sock)
    print(
        f"mock_llm: serving {len(settings.flows)} flows on {url} "
        f"(OpenAI base URL {url}/v1, journal {url}/_mock/requests)",
        flush=True,
    )
    server = uvicorn.Server(uvicorn_config(settings, access_log=args.access_log))
    server.run(sockets=[sock])
    return 0


def parse_record_args(
    argv: Sequence[str], prog: str = "python -m mock_llm record"
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="A proxy in front of an OpenAI-compatible server (or Ollama) that passes "
        "every answer through unchanged and records chat completions, Ollama's /api/chat and "
        "/api/generate and the Responses API as a flow file.",
    )
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the upstream's OpenAI base URL, e.g. http://127.0.0.1:8080/v1 (Ollama's /api/ "
        "is reached at its root, without the /v1)",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the recording (a flow file; gzip-compressed when it ends in .gz; an existing "
        "one is continued)",
    )
    add_listen_options(parser, RECORDER_PORT)
    parser.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="REGEX",
        help="replace what this matches in recorded texts by [REDACTED] (repeatable)",
    )
    parser.add_argument("--access-log", action="store_true", help="log every HTTP request")
    return parser.parse_args(argv)


def record_main(argv: Sequence[str], *, prog: str = "python -m mock_llm record") -> int:
    """`python -m mock_llm record ...`: serve the recording proxy until stopped."""
    args = parse_record_args(argv, prog)
    said = "mock_llm record"  # how its messages and its start line begin
    try:
        upstream = Upstream.parse(args.upstream)
    except UpstreamError as exc:
        print(f"{said}: --upstream: {exc}", file=sys.stderr)
        return 2
    try:
        redactor = Redactor(compile_patterns(args.redact))
    except RedactionError as exc:
        print(f"{said}: --redact: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    if not out.parent.is_dir() or not os.access(out.parent, os.W_OK):
        print(f"{said}: --out: cannot write into the folder {str(out.parent)!r}", file=sys.stderr)
        return 2
    try:
        recording = load_recording(out)
    except FlowFileError as exc:
        print(f"{said}: --out: the existing file is not a flow file: {exc}", file=sys.stderr)
        return 2
    sock = listen(said, args.host, args.port, f"send requests to {upstream.display} through it")
    if sock is None:
        return 2
    url = socket_url(sock)
    kept = f", continuing its {len(recording.flows)} flows" if recording.flows else ""
    print(
        f"{said}: recording {upstream.display} on {url} (OpenAI base URL {url}/v1) "
        f"into {out}{kept}",
        flush=True,
    )
    hosts = HostPolicy.of(args.allowed_hosts, args.host)
    settings = RecorderSettings(upstream, out, redactor, log=_print_line, hosts=hosts)
    recorder = Recorder(settings, recording)
    server = uvicorn.Server(recorder_config(recorder, access_log=args.access_log))
    server.run(sockets=[sock])
    return 0


def _print_line(line: str) -> None:
    print(line, flush=True)
