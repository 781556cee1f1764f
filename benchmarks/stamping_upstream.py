"""A model server for latency: each chunk's text is the time it was written.

`python benchmarks/stamping_upstream.py --port P` answers `POST /v1/chat/completions` with a
streamed chat completion (HTTP/1.1, chunked, keep-alive) whose every content chunk reads
`t=NS ` (NS: CLOCK_MONOTONIC in ns when the chunk was written, the clock `time.perf_counter`
reads on Linux, for every process of the machine), so a client subtracts it from the time
it read the chunk: the chunk's latency from the upstream's write to the client's read,
through whatever sits between. The model name says the stream's shape: `stamp-NxMS`, N
content chunks written MS ms apart (`stamp-100x10`: 100 chunks at 100 per second). The
text is clean (no marker of any family), so a guard in between forwards each chunk as the
upstream's bytes. `GET /healthz` answers 200.

An asyncio protocol with httptools' parser: nothing of the project, so the same stream
reaches a client straight, through nginx and through the guard, and its CPU is no part of
theirs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from typing import cast

import httptools

SHAPE = re.compile(r"stamp-(\d+)x(\d+)")
HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(model: str, delta: dict[str, str], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "chatcmpl-stamp", "object": "chat.completion.chunk", "created": 0,
             "model": model, "choices": [choice]}  # fmt: skip
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


class Stamping(asyncio.Protocol):
    """One client connection: requests one after another (keep-alive), each a stream."""

    def __init__(self) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.WriteTransport | None = None
        self.url = b""
        self.body: list[bytes] = []
        self.writing: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.WriteTransport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._close()

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        url, body = self.url, b"".join(self.body)
        self.url, self.body = b"", []
        if url == b"/healthz":
            self._write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            return
        try:
            model = str(json.loads(body).get("model", ""))
        except (ValueError, AttributeError):
            model = ""
        shape = SHAPE.fullmatch(model)
        if shape is None:
            self._write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        chunks, pace_ms = int(shape[1]), int(shape[2])
        self.writing = asyncio.get_running_loop().create_task(self._stream(model, chunks, pace_ms))

    async def _stream(self, model: str, chunks: int, pace_ms: int) -> None:
        self._write(HEAD + chunked(event(model, {"role": "assistant", "content": ""})))
        start = time.perf_counter()
        for n in range(chunks):
            if pace_ms:
                await asyncio.sleep(max(0.0, start + n * pace_ms / 1000 - time.perf_counter()))
            self._write(chunked(event(model, {"content": f"t={time.perf_counter_ns()} "})))
        end = event(model, {}, "stop") + b"data: [DONE]\n\n"
        self._write(chunked(end) + b"0\r\n\r\n")

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.writing is not None:
            self.writing.cancel()


async def serve(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(
        Stamping, "127.0.0.1", port, backlog=4096
    )
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1", help="(loopback only)")
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
