"""Bursts at a server's keep-alive boundary: requests lost to stale pooled connections.

Serves the mock under uvicorn with a short keep-alive, sends bursts of concurrent streamed
completions after idle gaps just around it, and counts the requests each client loses: an
old-settings aiohttp baseline, the guard proxy, and the app's model client (with and
without a long idle time); then bursts spread over every route of the guard proxy and of
the recorder (chat completions, the Responses API, the Messages API and Ollama's /api/chat,
each streamed and whole, and a passed-on GET). Targets: the proxy, the app's client and
the recorder lose none, on any route. A baseline that loses none says NO VERDICT (the race
was not met); a missed target exits 1. Loopback only, bounded (about 4 minutes). See
docs/benchmarks.md.

    uv run python benchmarks/stale_connections.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from servers import REPO_ROOT, RunningServer, ServerSpec, guard_spec, serving
from turns import QUESTION, Keys, Turn, chat_body, chat_streams, post_request, stream_one
from verdicts import report, verdict

from scaffold_guard.app.errors import LLMError
from scaffold_guard.app.rag.llm import LLMConfig, UpstreamClient, chat_stream
from scaffold_guard.app.rag.types import ChatMessage, RoundEnd
from servekit.pool import POOL_IDLE_S

REQUEST_GUARD_S = 60.0  # a hang guard per request, not a timing claim
AIOHTTP_IDLE_S = 15.0  # aiohttp's default keep-alive of an idle pooled connection
CLIENTS = ("baseline", "guard", "app", "app-retry-only", "guard-routes", "recorder-routes")
TITLES = {
    "baseline": "plain aiohttp session (old: 15 s idle, no retry)",
    "guard": f"guard proxy ({POOL_IDLE_S:g} s idle + retry)",
    "app": f"app's model client ({POOL_IDLE_S:g} s idle + retry)",
    "app-retry-only": "app's model client, 15 s idle (retry alone)",
    "guard-routes": "guard proxy, every route",
    "recorder-routes": "recorder, every route",
}

Burst = Callable[[int], Awaitable[int]]  # sends N requests at once; how many were lost


# --- the mock with a keep-alive of our choosing (a child of this script) ------------------------


def serve_mock(port: int, keep_alive_s: int) -> None:
    """`python -m mock_llm` with uvicorn's `timeout_keep_alive` set (this script's child)."""
    import uvicorn

    from mock_llm.server.runner import build_settings, uvicorn_config
    from servekit.listen import bind_socket

    config = uvicorn_config(build_settings())
    config.timeout_keep_alive = keep_alive_s
    sock = bind_socket("127.0.0.1", port)
    uvicorn.Server(config).run(sockets=[sock])


def mock_spec(keep_alive_s: int, port: int) -> ServerSpec:
    argv = [sys.executable, __file__, "--serve-mock", str(port), str(keep_alive_s)]
    return ServerSpec(
        f"mock-keepalive-{keep_alive_s}", argv, dict(os.environ), REPO_ROOT, "/healthz"
    )


# --- the clients ------------------------------------------------------------------------------


def plain_burst(session: aiohttp.ClientSession, mock: RunningServer, keys: Keys) -> Burst:
    async def one() -> bool:
        try:
            async with asyncio.timeout(REQUEST_GUARD_S):
                async with session.post(
                    f"{mock.base_url}/v1/chat/completions", json=chat_body(keys, "clean")
                ) as response:
                    body = await response.read()
            return response.status == 200 and b"data: [DONE]" in body
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False

    async def burst(n: int) -> int:
        return sum(not ok for ok in await asyncio.gather(*(one() for _ in range(n))))

    return burst


def guard_burst(guard: RunningServer, keys: Keys) -> Burst:
    async def burst(n: int) -> int:
        turns = await chat_streams(guard, "clean", n, keys)
        return sum(
            1
            for t in turns
            if t.error or t.status != 200 or b"data: [DONE]" not in b"".join(t.body)
        )

    return burst


def app_burst(client: UpstreamClient, keys: Keys) -> Burst:
    async def one() -> bool:
        messages: list[ChatMessage] = [
            {"role": "user", "content": f"{QUESTION} {keys.trigger('clean')}"}
        ]
        try:
            async with asyncio.timeout(REQUEST_GUARD_S):
                items = [i async for i in chat_stream(client, "m", messages, None)]
        except (LLMError, TimeoutError):
            return False
        return isinstance(items[-1], RoundEnd)

    async def burst(n: int) -> int:
        return sum(not ok for ok in await asyncio.gather(*(one() for _ in range(n))))

    return burst


# --- every route of the guard proxy and of the recorder ------------------------------------------


def _json(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _last(body: bytes, separator: bytes) -> bytes:
    """The last non-blank event (or line) of a streamed body."""
    parts = [part for part in body.split(separator) if part.strip()]
    return parts[-1] if parts else b""


@dataclass(frozen=True)
class Route:
    """One route a burst spreads over: its request (a body made with a fresh mock KEY, or
    None for a GET) and whether what came back is the whole answer."""

    name: str
    path: str
    body: Callable[[Keys], dict[str, Any]] | None
    whole: Callable[[bytes], bool]


def _question(keys: Keys) -> str:
    return f"{QUESTION} {keys.trigger('clean')}"


def _messages(keys: Keys) -> list[dict[str, str]]:
    return [{"role": "user", "content": _question(keys)}]


ROUTES = (
    Route("chat, streamed", "/v1/chat/completions", lambda k: chat_body(k, "clean"),
          lambda b: b.rstrip().endswith(b"data: [DONE]")),
    Route("chat, whole", "/v1/chat/completions",
          lambda k: {"model": "m", "stream": False, "messages": _messages(k)},
          lambda b: _json(b).get("object") == "chat.completion"),
    Route("responses, streamed", "/v1/responses",
          lambda k: {"model": "m", "stream": True, "input": _question(k)},
          lambda b: b"response.completed" in _last(b, b"\n\n")),
    Route("responses, whole", "/v1/responses",
          lambda k: {"model": "m", "input": _question(k)},
          lambda b: _json(b).get("status") == "completed"),
    Route("messages, streamed", "/v1/messages",
          lambda k: {"model": "m", "max_tokens": 64, "stream": True, "messages": _messages(k)},
          lambda b: b"message_stop" in _last(b, b"\n\n")),
    Route("messages, whole", "/v1/messages",
          lambda k: {"model": "m", "max_tokens": 64, "messages": _messages(k)},
          lambda b: _json(b).get("type") == "message"),
    Route("ollama, streamed", "/api/chat", lambda k: {"model": "m", "messages": _messages(k)},
          lambda b: _json(_last(b, b"\n")).get("done") is True),
    Route("ollama, whole", "/api/chat",
          lambda k: {"model": "m", "stream": False, "messages": _messages(k)},
          lambda b: _json(b).get("done") is True),
    Route("passed on (GET /v1/models)", "/v1/models", None,
          lambda b: _json(b).get("object") == "list"),
)  # fmt: skip


def get_request(port: int, path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()


def lost(route: Route, turn: Turn) -> bool:
    return turn.error is not None or turn.status != 200 or not route.whole(b"".join(turn.body))


@dataclass
class RouteLosses:
    """What a client that spreads its bursts over ROUTES lost on each route."""

    lost: dict[str, int] = field(default_factory=lambda: {r.name: 0 for r in ROUTES})
    sent: dict[str, int] = field(default_factory=lambda: {r.name: 0 for r in ROUTES})


def routes_burst(server: RunningServer, keys: Keys, losses: RouteLosses) -> Burst:
    """N requests at once, spread in turn over ROUTES, each on a connection of its own to
    `server` (so only the server's own upstream pool meets the keep-alive boundary)."""

    async def one(route: Route) -> bool:
        request = (
            get_request(server.port, route.path)
            if route.body is None
            else post_request(server.port, route.path, route.body(keys))
        )
        turn = await stream_one(server.port, request, b"")
        failed = lost(route, turn)
        losses.sent[route.name] += 1
        losses.lost[route.name] += failed
        return failed

    async def burst(n: int) -> int:
        routes = [ROUTES[i % len(ROUTES)] for i in range(n)]
        return sum(await asyncio.gather(*(one(route) for route in routes)))

    return burst


def recorder_spec(upstream: RunningServer, out: Path, port: int) -> ServerSpec:
    """`python -m mock_llm record --upstream UPSTREAM/v1 --out OUT` from the checkout."""
    argv = [sys.executable, "-m", "mock_llm", "record", "--upstream", f"{upstream.base_url}/v1",
            "--out", str(out), "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    return ServerSpec("mock_llm-record", argv, dict(os.environ), REPO_ROOT, "/v1/models")


# --- the run ----------------------------------------------------------------------------------


@dataclass
class Sweep:
    """One client's bursts against one keep-alive: the lost count at each gap."""

    lost: dict[float, int] = field(default_factory=dict[float, int])
    retried: int | None = None  # stale requests sent again (the app's client, where known)
    routes: RouteLosses | None = None  # by route, for a client that spreads over ROUTES


async def sweep(burst: Burst, size: int, gaps: Sequence[float]) -> Sweep:
    out = Sweep()
    await burst(size)  # fills the pool
    for gap in gaps:
        await asyncio.sleep(gap)  # the idle time is the measurement's input, not a wait
        out.lost[gap] = await burst(size)
    return out


async def one_keep_alive(
    keep_alive_s: int, args: argparse.Namespace, folder: Path
) -> dict[str, Sweep]:
    keys = Keys()
    gaps = [round(keep_alive_s + offset, 3) for offset in args.offsets]
    sweeps: dict[str, Sweep] = {}
    recording = folder / f"recording-{keep_alive_s}.yaml"
    async with (
        serving(lambda port: mock_spec(keep_alive_s, port), folder) as mock,
        serving(lambda port: guard_spec(mock, port), folder) as guard,
        serving(lambda port: recorder_spec(mock, recording, port), folder) as recorder,
    ):
        connector = aiohttp.TCPConnector(limit=0)  # the old guard's and app's session
        async with aiohttp.ClientSession(connector=connector) as session:
            sweeps["baseline"] = await sweep(plain_burst(session, mock, keys), args.burst, gaps)
        sweeps["guard"] = await sweep(guard_burst(guard, keys), args.burst, gaps)
        for name, idle_s in (("app", POOL_IDLE_S), ("app-retry-only", AIOHTTP_IDLE_S)):
            config = LLMConfig(base_url=f"{mock.base_url}/v1", model="m", pool_idle_s=idle_s)
            async with UpstreamClient(config) as client:
                sweeps[name] = await sweep(app_burst(client, keys), args.burst, gaps)
                sweeps[name].retried = client.pool.retried
        for name, server in (("guard-routes", guard), ("recorder-routes", recorder)):
            losses = RouteLosses()
            sweeps[name] = await sweep(routes_burst(server, keys, losses), args.burst, gaps)
            sweeps[name].routes = losses
    return sweeps


async def run(args: argparse.Namespace) -> list[str]:
    started = time.perf_counter()
    results: dict[int, dict[str, Sweep]] = {}
    with tempfile.TemporaryDirectory(prefix="sg-stale-") as tmp:
        for keep_alive_s in args.keep_alive:
            results[keep_alive_s] = await one_keep_alive(keep_alive_s, args, Path(tmp))
    wall_s = time.perf_counter() - started

    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    lines = [
        f"# Bursts of {args.burst} concurrent streams at the server's keep-alive boundary"
        f" ({platform.python_version()}, {os.cpu_count()} cores, load {load}, {wall_s:.0f} s)",
        "",
        "Requests lost per burst, each burst sent after the previous one ended plus the idle gap.",
        "",
        "| server keep-alive | idle gap s | " + " | ".join(TITLES[c] for c in CLIENTS) + " |",
        "|---|---:|" + "---:|" * len(CLIENTS),
    ]
    totals = dict.fromkeys(CLIENTS, 0)
    bursts = 0
    met = 0
    for keep_alive_s, sweeps in results.items():
        for gap in sweeps["baseline"].lost:
            lost = {c: sweeps[c].lost[gap] for c in CLIENTS}
            for c in CLIENTS:
                totals[c] += lost[c]
            bursts += 1
            met += lost["baseline"] > 0
            cells = " | ".join(str(lost[c]) for c in CLIENTS)
            lines.append(f"| {keep_alive_s} s | {gap:.3f} | {cells} |")
    requests = bursts * args.burst
    lines.append(
        f"| all | {bursts} bursts | "
        + " | ".join(f"**{totals[c]}** of {requests}" for c in CLIENTS)
        + " |"
    )
    retried = {
        c: sum(s[c].retried or 0 for s in results.values()) for c in ("app", "app-retry-only")
    }
    lines += [
        "",
        f"The app's client sent {retried['app']} requests again on a fresh connection"
        f" ({retried['app-retry-only']} with the 15 s idle time); every one was answered.",
        "",
        "Requests lost by route, over every burst (the fill bursts included): lost of sent.",
        "",
        "| route | " + " | ".join(TITLES[c] for c in ("guard-routes", "recorder-routes")) + " |",
        "|---|---:|---:|",
    ]
    for route in ROUTES:
        cells = []
        for client in ("guard-routes", "recorder-routes"):
            by_route = [s[client].routes for s in results.values()]
            sent = sum(r.sent[route.name] for r in by_route if r is not None)
            gone = sum(r.lost[route.name] for r in by_route if r is not None)
            cells.append(f"{gone} of {sent}")
        lines.append(f"| {route.name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        verdict(totals["guard"] == 0, f"the guard proxy lost {totals['guard']} of {requests}"),
        verdict(totals["app"] == 0, f"the app's model client lost {totals['app']} of {requests}"),
        verdict(
            totals["app-retry-only"] == 0,
            f"with aiohttp's 15 s idle time the retry alone lost {totals['app-retry-only']}"
            f" of {requests}",
        ),
        *(route_verdict(results, client) for client in ("guard-routes", "recorder-routes")),
        (
            f"PASS: the race was met: the baseline lost {totals['baseline']} of {requests}"
            f" ({met} of {bursts} bursts lost some)"
            if totals["baseline"]
            else "NO VERDICT: the baseline lost nothing: the race was not met in this run"
        ),
    ]
    return lines


def route_verdict(results: dict[int, dict[str, Sweep]], client: str) -> str:
    """Nothing lost on any route, over every burst of the client (its fill bursts too)."""
    by_route = [r for sweeps in results.values() if (r := sweeps[client].routes) is not None]
    gone = sum(sum(r.lost.values()) for r in by_route)
    sent = sum(sum(r.sent.values()) for r in by_route)
    who = {"guard-routes": "the guard proxy", "recorder-routes": "the recorder"}[client]
    return verdict(gone == 0, f"{who} lost {gone} of {sent} spread over {len(ROUTES)} routes")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--serve-mock"]:
        serve_mock(int(argv[1]), int(argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--burst", type=int, default=200, help="concurrent requests a burst (200)")
    parser.add_argument(
        "--keep-alive", type=int, nargs="+", default=[1, 5], help="server keep-alives, s (1 5)"
    )
    parser.add_argument(
        "--offsets",
        type=float,
        nargs="+",
        default=[-0.1, -0.05, -0.03, -0.01, 0.0, 0.05],
        help="idle gaps around the keep-alive, s (-0.1 -0.05 -0.03 -0.01 0 0.05)",
    )
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    return report(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
