"""`python -m app`: serve the notes chat. With no LLM configured it is the embedded demo.

The embedded demo starts the mock LLM in-process (so the whole thing runs offline and the
mock's journal shows every upstream request), uses the bundled sample notes, and keeps its
database in ./data. Its mock answers a question with no trigger from the notes the app sent
it (demo_flows.yaml: the mock's extractive responder), so plain questions get real answers.
Set SG_LLM_BASE_URL (and the other SG_ variables, see README) to talk to a real model
instead; nothing else changes. It listens on loopback unless told otherwise (`--host`),
and warns on stderr when told to listen anywhere else: the chat has no login.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import uvicorn

from mock_llm import build_settings, serve_mock
from scaffold_guard.app.api.sse import OpenStreams
from scaffold_guard.app.config import SettingsError, load_settings
from scaffold_guard.app.data_dir import DataDirError
from scaffold_guard.app.main import create_app
from servekit.listen import add_listen_options, bind_socket, exposure_warning, socket_url

DEMO_FLOWS = Path(__file__).with_name("demo_flows.yaml")


class AppServer(uvicorn.Server):
    """uvicorn's server, which ends the open chat streams first when it shuts down (each
    with an `error` frame saying so), rather than wait out its graceful timeout on a long
    turn and then cut it."""

    def __init__(self, config: uvicorn.Config, streams: OpenStreams) -> None:
        super().__init__(config)
        self.streams = streams

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.streams.end_all()
        await super().shutdown(sockets)


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m scaffold_guard.app") -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Serve the notes chat.")
    add_listen_options(parser, 8000, hosts_from_env=False)  # load_settings reads it
    args = parser.parse_args(argv)
    warning = exposure_warning("app", args.host, "ask about your notes and read the chat history")
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    try:
        settings = load_settings(os.environ)
    except SettingsError as exc:
        print(f"app: {exc}", file=sys.stderr)
        return 2
    allowed = settings.allowed_hosts if args.allowed_hosts is None else args.allowed_hosts
    settings = dataclasses.replace(settings, allowed_hosts=allowed, bound_host=args.host)
    with ExitStack() as stack:
        mock_url = None
        if settings.embedded:
            mock_url = stack.enter_context(serve_mock(build_settings((DEMO_FLOWS,))))
            settings = dataclasses.replace(
                settings, llm_base_url=f"{mock_url}/v1", embedded_mock_url=mock_url
            )
        try:
            sock = bind_socket(args.host, args.port)
        except OSError as exc:
            print(f"app: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
            return 2
        stack.callback(sock.close)
        try:
            app = create_app(settings, log_echo=sys.stderr)
        except DataDirError as exc:
            print(f"app: {exc}", file=sys.stderr)
            return 2
        url = socket_url(sock)
        print(f"app: notes chat on {url}/ (notes: {settings.notes_dir})", flush=True)
        if mock_url is not None:
            print(
                f"app: embedded mock LLM on {mock_url} (journal {mock_url}/_mock/requests)",
                flush=True,
            )
        else:
            print(f"app: LLM at {settings.llm_base_url} (model {settings.llm_model})", flush=True)
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)
        AppServer(config, app.state.open_streams).run(sockets=[sock])
    return 0
