"""What the record-and-replay tests share: the mock as the upstream, wrapped in a tee that
keeps every byte it sends and every header it receives, the recorder in front of it, and a
client that reads an answer byte for byte."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_llm import build_settings, create_app, load_flow_file
from mock_llm.flows.model import Flow
from mock_llm.record.recorder import Recorder, RecorderSettings, Upstream, serve_recorder
from mock_llm.server.played import quiet_abort_logs
from servekit.in_thread import serve_in_thread

from ...support.deadlines import DEADLINE_S

SECRET_KEY = "sk-live-7Hq2Zr9fXw4TcN1e"
EXTRA_FLOWS = f"""
flows:
  paced:
    steps:
      - content: one two three four
        delay_ms: 25
  cut-in-tools:
    steps:
      - reasoning: Look it up.
        tool_calls:
          - {{name: read, arguments: {{path: /homelab/a.md}}}}
        chunking: 3
        fault: {{kind: cut, after_chunks: 5}}
  short-stall:
    steps:
      - content: one two three four five
        fault: {{kind: stall, after_chunks: 3, seconds: 0.05}}
  bad-key:
    steps:
      - fault:
          kind: http
          status: 401
          message: "Incorrect API key provided: {SECRET_KEY}."
          code: invalid_api_key
          retry_after: null
"""


@dataclass
class Teed:
    """One request as the upstream mock saw it."""

    request_headers: list[tuple[str, str]]
    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    body: bytes = b""


class Tee:
    """The mock app, keeping what each request carried and every byte of its answer, by
    the answer's `x-request-id`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: dict[str, Teed] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        teed = Teed([(k.decode(), v.decode()) for k, v in scope["headers"]])

        async def tee_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                teed.status = message["status"]
                teed.headers = [(k.decode(), v.decode()) for k, v in message["headers"]]
                request_id = dict(teed.headers).get("x-request-id")
                if request_id is not None:
                    self.seen[request_id] = teed
            elif message["type"] == "http.response.body":
                teed.body += message.get("body", b"")
            await send(message)

        await self.app(scope, receive, tee_send)


@dataclass
class Upstreams:
    url: str
    tee: Tee


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstreams]:
    flows = tmp_path_factory.mktemp("upstream") / "extra.yaml"
    flows.write_text(EXTRA_FLOWS, encoding="utf-8")
    tee = Tee(create_app(build_settings((flows,))))
    quiet_abort_logs()
    config = uvicorn.Config(tee, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    with serve_in_thread(config) as url:
        yield Upstreams(url, tee)


@dataclass
class Rec:
    url: str
    recorder: Recorder
    out: Path

    async def saved(self, count: int = 1) -> dict[str, Flow]:
        """The recording once `count` exchanges are in it, read back as a flow file."""
        await counted(self.recorder, saved=count)
        return load_flow_file(self.out)


async def counted(recorder: Recorder, *, saved: int = 0, skipped: int = 0) -> None:
    """Return once the recorder counts that many exchanges (it writes just after the answer
    ended), waiting on its signal in a worker thread."""
    done = await asyncio.to_thread(
        recorder.wait_for, saved=saved, skipped=skipped, timeout_s=DEADLINE_S
    )
    assert done, f"the recorder counted {recorder.saved} saved and {recorder.skipped} skipped"


@pytest.fixture
def rec(upstream: Upstreams, tmp_path: Path) -> Iterator[Rec]:
    out = tmp_path / "recording.yaml"
    settings = RecorderSettings(Upstream.parse(f"{upstream.url}/v1"), out)
    with serve_recorder(settings) as (url, recorder):
        yield Rec(url, recorder, out)


@dataclass
class Raw:
    """A chat completion as a client received it, byte for byte."""

    status: int
    headers: httpx.Headers
    body: bytes
    error: Exception | None = None

    @property
    def events(self) -> list[str]:
        """The `data:` payloads, in order."""
        text = self.body.decode()
        return [
            line.removeprefix("data: ")
            for event in text.split("\n\n")
            for line in event.splitlines()
            if line.startswith("data: ")
        ]

    @property
    def chunks(self) -> list[object]:
        """Each event, as the replay must repeat it: a chunk without its id and creation
        time (the replaying mock numbers its own), `[DONE]`, or a line that is not JSON."""
        out: list[object] = []
        for event in self.events:
            try:
                chunk = json.loads(event)
            except ValueError:
                out.append(event)
                continue
            if isinstance(chunk, dict):
                chunk.pop("id", None)
                chunk.pop("created", None)
            out.append(chunk)
        return out


def again_key(key: str) -> str:
    """A KEY of the same length as `key` (the usage counts count its characters)."""
    return "r" + key[1:]


def keys_for(key: str, flows: list[str]) -> dict[str, str]:
    """A KEY per flow, each of `key`'s length, so one recording holds every flow's turn."""
    return {flow: f"{key[:-2]}{n:02x}" for n, flow in enumerate(flows)}


def ask(flow: str, key: str, stream: bool = True, **extra: Any) -> dict[str, Any]:
    messages = [{"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"}]
    return {"model": "lfm2-test", "messages": messages, "stream": stream, **extra}


async def post(
    url: str,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    path: str = "/v1/chat/completions",
) -> Raw:
    async with (
        asyncio.timeout(DEADLINE_S),
        httpx.AsyncClient(timeout=DEADLINE_S) as http,
        http.stream("POST", f"{url}{path}", json=body, headers=headers) as response,
    ):
        raw = Raw(response.status_code, response.headers, b"")
        try:
            async for part in response.aiter_raw():
                raw.body += part
        except httpx.HTTPError as exc:
            raw.error = exc
        return raw


def assert_passed_through(upstream: Upstreams, got: Raw) -> None:
    """The client got exactly the status, headers and bytes the mock sent."""
    teed = upstream.tee.seen[got.headers["x-request-id"]]
    assert got.status == teed.status
    assert got.body == teed.body
    for name, value in teed.headers:
        assert got.headers.get_list(name) == [value], name
