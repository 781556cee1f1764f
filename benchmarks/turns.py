"""A light client for the benchmarks that time whole requests: one connection per request.

asyncio protocols with httptools' C parser; each request's body is kept as bytes with the
arrival time of each read and parsed only after the clock stops, so the client is not what
is measured. A `Turn` is what one request got; `measured` times a round of them with the
server's CPU; `Keys` gives every request a fresh mock KEY, so each plays its flow from the
start.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httptools
import yaml
from measure import group_cpu_seconds, percentile
from servers import RunningServer

TURN_TIMEOUT_S = 120.0  # a hang guard for one turn, not a timing claim
QUESTION = "When do backups run?"
PACED_FLOW = {
    "paced": {
        "description": "a clean answer at a steady pace (the 'slow' turns of the mix)",
        "steps": [
            {
                "content": "Backups run nightly at 02:00 with restic to the NAS, and the"
                " newest snapshot is verified every Sunday.",
                "delay_ms": 20,
            }
        ],
    }
}


@dataclass
class Turn:
    """What one request got: status, the body's bytes, when the first delta arrived."""

    status: int = 0
    body: list[bytes] = field(default_factory=list[bytes])
    reads: list[float] = field(default_factory=list[float])  # arrival of each body piece
    sent: float = 0.0
    first: float | None = None  # arrival of the read that carried the first delta/content
    ended: float = 0.0
    error: str | None = None

    @property
    def ttfd_ms(self) -> float | None:
        return None if self.first is None else (self.first - self.sent) * 1000

    def frames(self) -> list[dict[str, Any]]:
        """The body's `data:` payloads as JSON (after the clock: this is the slow part)."""
        lines = b"".join(self.body).split(b"\n")
        return [
            json.loads(line[5:])
            for line in lines
            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"
        ]


class _Protocol(asyncio.Protocol):
    def __init__(self, request: bytes, marker: bytes, turn: Turn, done: asyncio.Future[None]):
        self.request, self.marker, self.turn, self.done = request, marker, turn, done
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.WriteTransport | None = None
        self.now = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)
        self.turn.sent = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.now = time.perf_counter()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.turn.error = f"HTTP parse error: {exc}"
            self._close()

    def on_headers_complete(self) -> None:
        self.turn.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self.turn.first is None and self.marker in body:
            self.turn.first = self.now
        self.turn.body.append(body)
        self.turn.reads.append(self.now)

    def on_message_complete(self) -> None:
        self.turn.ended = self.now
        self._close()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.turn.ended and self.turn.error is None:
            self.turn.error = f"connection closed mid-response ({exc or 'EOF'})"
        if not self.done.done():
            self.done.set_result(None)


def post_request(port: int, path: str, body: dict[str, Any], headers: str = "") -> bytes:
    """The request's bytes (`headers`: more header lines, each ending in CRLF)."""
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(data)}\r\n{headers}Connection: close\r\n\r\n"
    )
    return head.encode() + data


async def stream_one(port: int, request: bytes, marker: bytes, turn: Turn | None = None) -> Turn:
    """One request's `Turn` (`turn`: the one to fill, for a caller that watches it fill)."""
    loop = asyncio.get_running_loop()
    turn = Turn() if turn is None else turn
    done: asyncio.Future[None] = loop.create_future()
    try:
        await loop.create_connection(
            lambda: _Protocol(request, marker, turn, done), "127.0.0.1", port
        )
        await asyncio.wait_for(asyncio.shield(done), TURN_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        turn.error = f"{type(exc).__name__}: {exc}"[:160]
    return turn


class Keys:
    """A fresh mock KEY per request, so every turn plays its flow from the start."""

    def __init__(self) -> None:
        self.n = 0

    def trigger(self, flow: str) -> str:
        self.n += 1
        return f"[[mock:{flow}#load-{self.n}]]"


@dataclass
class Round:
    turns: list[Turn]
    wall_s: float
    server_cpu_s: float
    client_cpu_s: float


async def measured(server: RunningServer, run: Awaitable[list[Turn]]) -> Round:
    cpu0, client0, start = (
        group_cpu_seconds(server.proc.pid),
        time.process_time(),
        time.perf_counter(),
    )
    turns = await run
    wall = time.perf_counter() - start
    return Round(
        turns, wall, group_cpu_seconds(server.proc.pid) - cpu0, time.process_time() - client0
    )


def data_chunks(turns: Sequence[Turn]) -> int:
    """The chunks the turns' streams delivered (`data:` events with JSON, after the clock)."""
    return sum(b"".join(turn.body).count(b"data: {") for turn in turns)


def failed(turns: Sequence[Turn]) -> int:
    """The turns that did not answer 200 and end."""
    return sum(1 for t in turns if t.error or t.status != 200)


def ms(values: Sequence[float], pct: float) -> float:
    return percentile(sorted(values), pct)


def ttfds(turns: Sequence[Turn]) -> list[float]:
    return [t for turn in turns if (t := turn.ttfd_ms) is not None]


CONTENT = b'"content":"'
"""What a chat-completions chunk with answer text carries: a stream's first content."""


def chat_body(keys: Keys, flow: str) -> dict[str, object]:
    """A streamed chat completion asking QUESTION, with a fresh trigger for `flow`."""
    message = f"{QUESTION} {keys.trigger(flow)}"
    return {"model": "m", "stream": True, "messages": [{"role": "user", "content": message}]}


async def chat_streams(
    server: RunningServer, flow: str, count: int, keys: Keys, headers: str = ""
) -> list[Turn]:
    """`count` concurrent streamed chat completions of `flow`, each timed to its first content
    (`headers`: more header lines for each request, as `post_request` takes them)."""
    requests = [
        post_request(server.port, "/v1/chat/completions", chat_body(keys, flow), headers)
        for _ in range(count)
    ]
    return await asyncio.gather(*(stream_one(server.port, r, CONTENT) for r in requests))


def write_paced_flows(folder: Path, *more: dict[str, Any]) -> Path:
    """A flows file holding PACED_FLOW (and the `more` flows), for the mock to serve next to
    its built-in flows."""
    flows = folder / "paced_flows.yaml"
    every: dict[str, Any] = {**PACED_FLOW}
    for flow in more:
        every.update(flow)
    flows.write_text(yaml.safe_dump({"flows": every}), encoding="utf-8")
    return flows
