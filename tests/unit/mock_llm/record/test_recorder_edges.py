"""The recorder's edges, driven as an ASGI app: no sockets.

A fake client hands the recorder its request (`receive`) and keeps what it is sent (`send`),
or fails to take it the way a departed client's connection does (OSError). The upstream is
an in-memory httpx transport: the recorder reaches its upstream only through its public
`client`, which `OverTransport` serves from an `httpx.MockTransport`, so every answer, a cut
one or a slow one included, is what the test says it is.
"""

from __future__ import annotations

import asyncio
import errno
import gzip
import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Message, Scope

from mock_llm.flows.flow_file import load_flow_file
from mock_llm.flows.flow_writer import dump_flows
from mock_llm.flows.model import CutFault, Flow, HttpFault, Step
from mock_llm.record.recorder import (
    MAX_BODY_BYTES,
    MAX_RECORDED_BODY_BYTES,
    Recorder,
    RecorderSettings,
    Upstream,
    write_atomically,
)
from servekit.httpx_pool import HttpxPool

from ....support.deadlines import DEADLINE_S

CHAT = "/v1/chat/completions"
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Nightly at 02:00."},
            "finish_reason": "stop",
        }
    ],
}
ANSWER_BYTES = json.dumps(ANSWER).encode()


def ask(key: str) -> bytes:
    """A chat request for the flow `f` in the turn `key` (its recorded name is `f`)."""
    messages = [{"role": "user", "content": f"When do backups run? [[mock:f#{key}]]"}]
    return json.dumps({"model": "lfm2-test", "messages": messages}).encode()


def http_scope(path: str = CHAT, method: str = "POST") -> Scope:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8097),
    }


@dataclass
class Client:
    """The client side of one ASGI connection.

    `receive` hands out the request body in `parts` (the last with `more_body` false), then
    whatever `after` holds, then blocks until the recorder stops listening (a client that
    stays). `send` keeps each message, but raises OSError for the message number
    `fail_send_at` (0 is the response start), as a connection the client has closed does.
    """

    parts: list[bytes]
    after: list[Message] = field(default_factory=list[Message])
    fail_send_at: int | None = None
    sent: list[Message] = field(default_factory=list[Message])
    received: int = 0
    asked: int = 0
    after_given: asyncio.Event = field(default_factory=asyncio.Event)

    async def receive(self) -> Message:
        self.received += 1
        if self.parts:
            part = self.parts.pop(0)
            return {"type": "http.request", "body": part, "more_body": bool(self.parts)}
        if self.after:
            message = self.after.pop(0)
            if not self.after:
                self.after_given.set()
            return message
        await asyncio.Event().wait()  # until cancelled
        raise AssertionError("unreachable")

    async def send(self, message: Message) -> None:
        self.asked += 1
        if self.fail_send_at == self.asked - 1:
            raise OSError(errno.EPIPE, "the client has gone")
        self.sent.append(message)

    @property
    def status(self) -> int:
        [start] = [m for m in self.sent if m["type"] == "http.response.start"]
        return start["status"]

    @property
    def headers(self) -> dict[bytes, bytes]:
        [start] = [m for m in self.sent if m["type"] == "http.response.start"]
        return dict(start["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")

    @property
    def ended(self) -> bool:
        """The response was finished (its last body message said there was no more)."""
        bodies = [m for m in self.sent if m["type"] == "http.response.body"]
        return bool(bodies) and not bodies[-1].get("more_body", False)


class UpstreamBody(httpx.AsyncByteStream):
    """An upstream's response body, read by read: it may wait for `before` first, and end
    with `error` (a connection cut mid-body) instead of ending cleanly."""

    def __init__(
        self,
        parts: list[bytes],
        *,
        before: asyncio.Event | None = None,
        error: Exception | None = None,
    ) -> None:
        self.parts = parts
        self.before = before
        self.error = error
        self.pulled = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.before is not None:
            await self.before.wait()
        for part in self.parts:
            self.pulled += 1
            yield part
        if self.error is not None:
            raise self.error

    async def aclose(self) -> None:
        self.closed = True


Handler = Callable[[httpx.Request], Coroutine[Any, Any, httpx.Response]]


class OverTransport(Recorder):
    """The recorder, its upstream client on an in-memory transport."""

    def __init__(self, settings: RecorderSettings, handler: Handler) -> None:
        super().__init__(settings)
        transport = httpx.MockTransport(handler)
        self.upstream = HttpxPool(timeout=httpx.Timeout(None), transport=transport)

    @property
    def pool(self) -> HttpxPool:
        return self.upstream


@dataclass
class Setup:
    recorder: OverTransport
    out: Path
    log: list[str]
    requests: list[httpx.Request]

    async def run(self, client: Client, scope: Scope | None = None) -> None:
        """One connection through the recorder, to its end (the file is written by then)."""
        async with asyncio.timeout(DEADLINE_S):
            await self.recorder(scope or http_scope(), client.receive, client.send)


@asynccontextmanager
async def recorder_over(
    tmp_path: Path,
    answer: Callable[[httpx.Request], httpx.Response],
    *,
    out: Path | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> AsyncGenerator[Setup]:
    """A recorder in front of an upstream that answers each request with `answer(request)`,
    keeping every request it was sent."""
    requests: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return answer(request)

    log: list[str] = []
    out = out if out is not None else tmp_path / "recording.yaml"
    settings = RecorderSettings(
        Upstream.parse("http://upstream.test/v1"),
        out,
        log=log.append,
        max_body_bytes=max_body_bytes,
    )
    recorder = OverTransport(settings, handler)
    try:
        yield Setup(recorder, out, log, requests)
    finally:
        async with asyncio.timeout(DEADLINE_S):
            await recorder.upstream.aclose()


def whole(
    body: bytes = ANSWER_BYTES, status: int = 200, headers: dict[str, str] | None = None
) -> Callable[[httpx.Request], httpx.Response]:
    """An upstream that answers every request with `body` in one read, with its
    Content-Length."""
    fixed = {"content-type": "application/json", "content-length": str(len(body))}
    return lambda _: httpx.Response(
        status, headers={**fixed, **(headers or {})}, stream=UpstreamBody([body])
    )


def streamed(
    body: UpstreamBody, status: int = 200, headers: dict[str, str] | None = None
) -> Callable[[httpx.Request], httpx.Response]:
    """An upstream that answers with `body`, read by read (no Content-Length)."""
    content_type = {"content-type": "application/json"}
    return lambda _: httpx.Response(
        status, headers={**content_type, **(headers or {})}, stream=body
    )


def never_asked(_: httpx.Request) -> httpx.Response:
    raise AssertionError("the upstream was asked")


# --- the file ---------------------------------------------------------------------------


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "rec.yaml"
    write_atomically(path, dump_flows([Flow("f", "", (Step(content="kept"),))]))

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(path, dump_flows([Flow("f", "", (Step(content="lost"),))]))
    assert load_flow_file(path)["f"].steps[0].content == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["rec.yaml"]


# --- what the ASGI app does before any upstream ------------------------------------------


async def test_a_websocket_connection_is_neither_read_nor_answered(tmp_path: Path):
    async with recorder_over(tmp_path, never_asked) as setup:
        client = Client([b""])
        await setup.run(client, {**http_scope(), "type": "websocket"})
    assert (client.received, client.sent) == (0, [])
    assert setup.requests == []


async def test_a_lifespan_starts_and_shuts_down_without_any_request(tmp_path: Path):
    recorder = Recorder(RecorderSettings(Upstream.parse("http://h/v1"), tmp_path / "r.yaml"))
    client = Client([], after=[{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    async with asyncio.timeout(DEADLINE_S):
        await recorder({"type": "lifespan"}, client.receive, client.send)
    assert client.sent == [
        {"type": "lifespan.startup.complete"},
        {"type": "lifespan.shutdown.complete"},
    ]


async def test_a_lifespan_message_the_recorder_does_not_know_is_ignored(tmp_path: Path):
    recorder = Recorder(RecorderSettings(Upstream.parse("http://h/v1"), tmp_path / "r.yaml"))
    messages: list[Message] = [
        {"type": "lifespan.startup"},
        {"type": "lifespan.something-new"},
        {"type": "lifespan.shutdown"},
    ]
    client = Client([], after=messages)
    async with asyncio.timeout(DEADLINE_S):
        await recorder({"type": "lifespan"}, client.receive, client.send)
    assert client.received == 3
    assert [m["type"] for m in client.sent] == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]


async def test_a_client_that_leaves_before_its_body_is_read_is_not_answered(tmp_path: Path):
    async with recorder_over(tmp_path, never_asked) as setup:
        client = Client([], after=[{"type": "http.disconnect"}])
        await setup.run(client)
    assert client.sent == []
    assert setup.requests == []
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 0)


async def test_a_body_over_the_limit_is_a_413_and_never_goes_upstream(tmp_path: Path):
    async with recorder_over(tmp_path, never_asked, max_body_bytes=10) as setup:
        client = Client([b"123456", b"789012"])  # 12 bytes, in two parts
        await setup.run(client)
    assert client.status == 413
    assert client.ended
    error = json.loads(client.body)["error"]
    assert error["type"] == "invalid_request_error"
    assert "too large for the recorder" in error["message"]
    assert setup.requests == []
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 0)


async def test_a_body_sent_in_parts_goes_upstream_whole(tmp_path: Path, key: str):
    body = ask(key)
    async with recorder_over(tmp_path, whole()) as setup:
        client = Client([body[:10], body[10:20], body[20:]])
        await setup.run(client)
    [request] = setup.requests
    assert request.content == body
    assert (client.status, client.body) == (200, ANSWER_BYTES)
    assert setup.recorder.saved == 1


# --- what passes through unrecorded ------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/models"), ("POST", "/v1/embeddings")])
async def test_a_request_that_is_no_chat_completion_passes_through_uncounted(
    tmp_path: Path, method: str, path: str
):
    async with recorder_over(tmp_path, whole(b'{"data": []}')) as setup:
        client = Client([b"" if method == "GET" else b'{"input": "x"}'])
        await setup.run(client, http_scope(path, method))
    [request] = setup.requests
    assert (request.method, request.url.path) == (method, path)
    assert (client.status, client.body, client.ended) == (200, b'{"data": []}', True)
    assert (setup.recorder.saved, setup.recorder.skipped, setup.log) == (0, 0, [])
    assert not setup.out.exists()


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_an_answer_whose_coding_cannot_be_decoded_passes_through_unrecorded(
    tmp_path: Path, key: str, coding: str
):
    parts = [b"this is not ", b"compressed at all"]
    answer = streamed(UpstreamBody(list(parts)), headers={"content-encoding": coding})
    async with recorder_over(tmp_path, answer) as setup:
        client = Client([ask(key)])
        await setup.run(client)
    assert (client.status, client.body, client.ended) == (200, b"".join(parts), True)
    assert client.headers[b"content-encoding"] == coding.encode()
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    assert setup.log == [
        f"mock_llm record: {CHAT}: not recorded: the answer's content coding cannot be read"
    ]
    assert not setup.out.exists()


async def test_a_gzip_answer_whose_checksum_fails_is_not_recorded(tmp_path: Path, key: str):
    """Its text decodes, but the trailer says it is not what was sent."""
    packed = gzip.compress(ANSWER_BYTES)
    trailer = bytes(b ^ 0xFF for b in packed[-8:-4]) + packed[-4:]  # a wrong CRC-32
    parts = [packed[:-8], trailer]
    answer = streamed(UpstreamBody(list(parts)), headers={"content-encoding": "gzip"})
    async with recorder_over(tmp_path, answer) as setup:
        client = Client([ask(key)])
        await setup.run(client)
    assert (client.body, client.ended) == (b"".join(parts), True)
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    assert setup.log[-1].endswith("not recorded: the answer's content coding cannot be read")


async def test_a_redirect_passes_through_unrecorded(tmp_path: Path, key: str):
    answer = whole(b"", 307, {"location": "http://elsewhere.test/v1/chat/completions"})
    async with recorder_over(tmp_path, answer) as setup:
        client = Client([ask(key)])
        await setup.run(client)
    assert client.status == 307
    assert client.headers[b"location"] == b"http://elsewhere.test/v1/chat/completions"
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    assert setup.log == [f"mock_llm record: {CHAT}: not recorded: the upstream answered 307"]


async def test_a_whole_answer_longer_than_the_recorded_limit_passes_through_unrecorded(
    tmp_path: Path, key: str
):
    parts = [b"x" * (MAX_RECORDED_BODY_BYTES + 1), b"and the rest"]
    async with recorder_over(tmp_path, streamed(UpstreamBody(list(parts)))) as setup:
        client = Client([ask(key)])
        await setup.run(client)
    assert client.ended
    assert client.body == b"".join(parts)
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    assert setup.log == [
        f"mock_llm record: {CHAT}: not recorded: "
        f"the answer is longer than {MAX_RECORDED_BODY_BYTES} bytes"
    ]


# --- a client that leaves mid-answer -----------------------------------------------------


async def test_a_client_gone_before_the_answer_starts_is_not_recorded(tmp_path: Path, key: str):
    body = UpstreamBody([ANSWER_BYTES])
    async with recorder_over(tmp_path, streamed(body)) as setup:
        client = Client([ask(key)], fail_send_at=0)
        await setup.run(client)
    assert client.sent == []
    assert (body.pulled, body.closed) == (0, True)
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    assert setup.log == [
        f"mock_llm record: {CHAT}: not recorded: the client left before the answer ended"
    ]
    assert not setup.out.exists()


async def test_a_client_gone_mid_body_is_not_recorded_and_the_upstream_read_stops(
    tmp_path: Path, key: str
):
    body = UpstreamBody([ANSWER_BYTES[:10], ANSWER_BYTES[10:20], ANSWER_BYTES[20:]])
    async with recorder_over(tmp_path, streamed(body)) as setup:
        client = Client([ask(key)], fail_send_at=2)  # start, the first read, then gone
        await setup.run(client)
    assert client.body == ANSWER_BYTES[:10]
    assert not client.ended
    assert (body.pulled, body.closed) == (2, True)
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 1)
    assert setup.log[-1].endswith("the client left before the answer ended")


async def test_a_client_gone_once_it_had_every_byte_is_still_recorded(tmp_path: Path, key: str):
    """With a Content-Length, the client may close as soon as it has it all."""
    async with recorder_over(tmp_path, whole()) as setup:
        client = Client([ask(key)], fail_send_at=2)  # start, the whole body, then gone
        await setup.run(client)
    assert client.body == ANSWER_BYTES
    assert (setup.recorder.saved, setup.recorder.skipped) == (1, 0)
    assert load_flow_file(setup.out)["f"].steps[0].content == "Nightly at 02:00."


async def test_a_message_from_the_client_other_than_a_disconnect_is_ignored(
    tmp_path: Path, key: str
):
    """The answer waits until the recorder's watch has taken the stray message, so it
    is seen while the answer is under way."""
    client = Client([ask(key)], after=[{"type": "http.request", "body": b"", "more_body": False}])
    body = UpstreamBody([ANSWER_BYTES], before=client.after_given)
    async with recorder_over(tmp_path, streamed(body)) as setup:
        await setup.run(client)
    assert client.received == 3  # the body, the stray message, then the watch went on
    assert (client.body, client.ended) == (ANSWER_BYTES, True)
    assert (setup.recorder.saved, setup.recorder.skipped) == (1, 0)


# --- what is recorded ---------------------------------------------------------------------


async def test_a_whole_answer_cut_mid_body_is_recorded_as_an_abort_before_any_chunk(
    tmp_path: Path, key: str
):
    body = UpstreamBody([ANSWER_BYTES[:15]], error=httpx.ReadError("connection reset"))
    async with recorder_over(tmp_path, streamed(body)) as setup:
        client = Client([ask(key)])
        await setup.run(client)
    assert client.body == ANSWER_BYTES[:15]
    assert not client.ended  # the client's answer is cut too
    assert (setup.recorder.saved, setup.recorder.skipped) == (1, 0)
    [step] = load_flow_file(setup.out)["f"].steps
    assert step.fault == CutFault(0, "abort")
    assert setup.log == ["mock_llm record: f step 1: whole, cut(abort) after 0 chunks"]


async def test_a_write_that_fails_is_logged_and_not_counted_as_saved(tmp_path: Path, key: str):
    out = tmp_path / "missing-folder" / "recording.yaml"
    async with recorder_over(tmp_path, whole(), out=out) as setup:
        client = Client([ask(key)])
        await setup.run(client)
    assert (client.status, client.body, client.ended) == (200, ANSWER_BYTES, True)
    assert (setup.recorder.saved, setup.recorder.skipped) == (0, 0)
    [line] = setup.log
    assert line.startswith(f"mock_llm record: cannot write {out}: ")
    assert "No such file or directory" in line
    assert not out.parent.exists()


async def test_an_answer_a_failed_write_lost_is_written_with_the_next_one(tmp_path: Path, key: str):
    out = tmp_path / "later" / "recording.yaml"
    async with recorder_over(tmp_path, whole(), out=out) as setup:
        await setup.run(Client([ask(key)]))
        out.parent.mkdir()
        await setup.run(Client([ask(key)]))
    steps = load_flow_file(out)["f"].steps
    assert [s.content for s in steps] == ["Nightly at 02:00.", "Nightly at 02:00."]
    assert setup.log[-1] == "mock_llm record: f step 2: whole, stop"


async def test_a_request_body_that_is_not_json_is_recorded_under_a_hash_without_a_model(
    tmp_path: Path,
):
    error: dict[str, Any] = {"error": {"message": "We could not parse the JSON body."}}
    answer = whole(json.dumps(error).encode(), 400)
    async with recorder_over(tmp_path, answer) as setup:
        client = Client([b"{not json"])
        await setup.run(client)
    [request] = setup.requests
    assert request.content == b"{not json"
    assert client.status == 400
    [(name, flow)] = load_flow_file(setup.out).items()
    assert name.startswith("rec-")
    assert "Recorded from http://upstream.test/v1" in flow.description
    assert "(model" not in flow.description
    [step] = flow.steps
    assert isinstance(step.fault, HttpFault)
    assert (step.fault.status, step.fault.message) == (400, "We could not parse the JSON body.")
