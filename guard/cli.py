"""`python -m guard --upstream URL`: serve the guard proxy in front of a model server.

Point a chat app at the proxy instead of its model server (its OpenAI base URL becomes
`http://127.0.0.1:8098/v1` when the model server's was `http://127.0.0.1:8080/v1`). The
proxy listens on loopback unless told otherwise (`--host`), and warns on stderr when told
to listen anywhere else: it has no login, and it passes the client's API key upstream.

`--upstream-ollama URL` names the same thing for an Ollama server, as Open WebUI's
OLLAMA_BASE_URL has it (`http://127.0.0.1:11434`): the proxy finds the route from the
client's path either way (`/v1/chat/completions`, `/api/chat`), so the two options differ
only in the URL they take (a trailing `/api` is taken off too) and in the start line,
which gives the URL an Ollama client is pointed at. Exactly one of them is given: two
upstreams cannot be served by one proxy, and two spellings of one would only be a chance
to disagree.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import socket
import sys
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from guard.settings import GuardSettings
from guardrail.model_profiles import parse_profiles
from guardrail.registries import PROFILES
from servekit.allowed_hosts import HostPolicy
from servekit.keep_alive import CLIENT_KEEPALIVE_S, POOL_IDLE_S
from servekit.listen import add_listen_options, listen, socket_url
from servekit.workers import serve_workers

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

SERVERS = ("auto", "uvicorn", "asyncio")
FULL_STACK = ("uvicorn", "starlette", "aiohttp")
"""What the `uvicorn` server needs: the `proxy` extra."""
BARE_NOTE = (
    "guard: served by asyncio and h11, as a bare install has them;"
    " pip install 'scaffold-guard[proxy]' serves it with uvicorn"
)


def parse_args(
    argv: Sequence[str] | None = None, prog: str = "python -m guard"
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="An OpenAI-compatible proxy that keeps tool-call markup out of answers.",
    )
    upstream = parser.add_mutually_exclusive_group(required=True)
    upstream.add_argument(
        "--upstream",
        help="the model server's base URL, as the chat app had it (e.g. http://127.0.0.1:8080/v1)",
    )
    upstream.add_argument(
        "--upstream-ollama",
        metavar="URL",
        help="the same for an Ollama server, as OLLAMA_BASE_URL (e.g. http://127.0.0.1:11434)",
    )
    add_listen_options(parser, 8098)
    parser.add_argument(
        "--keepalive-s",
        type=float,
        default=15.0,
        help="after this many seconds of upstream silence mid-stream, send a keep-alive (an"
        " SSE comment; a ping event on the Messages API; none on NDJSON streams) (15)",
    )
    parser.add_argument(
        "--upstream-idle-s",
        type=float,
        default=POOL_IDLE_S,
        help="keep an idle connection to the upstream this many seconds for reuse; keep it"
        f" shorter than the upstream's own keep-alive ({POOL_IDLE_S:g})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes serving the one socket (1); it keeps no state between"
        " requests, so any worker takes any request (docs/proxy.md)",
    )
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default="auto",
        help="uvicorn: the full proxy (the `proxy` extra: uvicorn, Starlette, aiohttp);"
        " asyncio: the bare install's server (asyncio and h11 in front of the in-process"
        " transport, docs/proxy.md); auto: uvicorn when the extra is installed (auto)",
    )
    parser.add_argument(
        "--profiles",
        default="auto",
        help="markup stripped besides LFM2's: auto (by each request's model name), none,"
        f" all, or profiles, comma-separated ({', '.join(sorted(PROFILES))})",
    )
    return parser.parse_args(argv)


def upstream_root(url: str, *, ollama: bool = False) -> str | None:
    """The upstream's scheme://host[:port][/prefix] with any trailing /v1 (and for
    `ollama`, /api) left off: the proxy keeps the client's own path, so the base URL is
    the server's root."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    path = parts.path.rstrip("/")
    for suffix in ("/v1", "/api") if ollama else ("/v1",):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return f"{parts.scheme}://{parts.netloc}{path}"


def server_config(app: ASGIApp) -> uvicorn.Config:
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="warning",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=int(CLIENT_KEEPALIVE_S),
    )


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m guard") -> int:
    args = parse_args(argv, prog)
    ollama = args.upstream_ollama is not None
    given: str = args.upstream_ollama if ollama else args.upstream
    root = upstream_root(given, ollama=ollama)
    if root is None:
        option = "--upstream-ollama" if ollama else "--upstream"
        print(f"guard: {option} must be an http(s) URL, not {given!r}", file=sys.stderr)
        return 2
    try:
        profiles = parse_profiles(args.profiles)
    except ValueError as error:
        print(f"guard: {error}", file=sys.stderr)
        return 2
    for option, seconds in (
        ("--keepalive-s", args.keepalive_s),
        ("--upstream-idle-s", args.upstream_idle_s),
    ):
        if not seconds > 0:
            print(f"guard: {option} must be more than 0", file=sys.stderr)
            return 2
    if args.server == "uvicorn" and not full_stack_installed():
        print(
            "guard: --server uvicorn needs the proxy extra: pip install 'scaffold-guard[proxy]'",
            file=sys.stderr,
        )
        return 2
    if args.workers < 1:
        print("guard: --workers must be 1 or more", file=sys.stderr)
        return 2
    sock = listen("guard", args.host, args.port, "use your model server with your API key")
    if sock is None:
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    settings = GuardSettings(
        upstream=root,
        profiles=profiles,
        keepalive_s=args.keepalive_s,
        pool_idle_s=args.upstream_idle_s,
        hosts=HostPolicy.of(args.allowed_hosts, args.host),
    )
    if ollama:
        print(f"guard: proxy on {socket_url(sock)} for Ollama at {root}", flush=True)
    else:
        print(f"guard: proxy on {socket_url(sock)}/v1 for {root}", flush=True)

    if args.server == "auto" and not full_stack_installed():
        print(BARE_NOTE, file=sys.stderr, flush=True)
    serve = chosen_server(args.server, sock, settings)
    try:
        if args.workers == 1:
            serve()
            return 0
        return serve_workers(args.workers, serve)
    finally:
        sock.close()


def full_stack_installed() -> bool:
    """Whether the `proxy` extra's packages are importable."""
    return all(importlib.util.find_spec(name) is not None for name in FULL_STACK)


def chosen_server(name: str, sock: socket.socket, settings: GuardSettings) -> partial[None]:
    """What serves the socket: `name`, or for auto the full proxy when it is installed."""
    if name == "asyncio" or (name == "auto" and not full_stack_installed()):
        from guard.bare.server import serve_forever

        return partial(serve_forever, sock, settings)
    return partial(_serve_uvicorn, sock, settings)


def _serve_uvicorn(sock: socket.socket, settings: GuardSettings) -> None:
    import uvicorn

    from guard.http.server import create_app

    uvicorn.Server(server_config(create_app(settings))).run(sockets=[sock])
