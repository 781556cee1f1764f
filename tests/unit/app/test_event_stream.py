"""scaffold_guard.app.api.sse.EventStream as an ASGI callable, driven with fake receive/send: no
sockets.

Every wait is on an event (a message sent, a generator closed), under DEADLINE_S.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from scaffold_guard.app.api.sse import KEEPALIVE, MEDIA_TYPE, EventStream, OpenStreams

from ...support.deadlines import DEADLINE_S

SCOPE: dict[str, Any] = {"type": "http", "method": "POST", "path": "/api/chat"}


@dataclass
class Client:
    """The ASGI side of one response: what was sent, and when the client leaves."""

    sent: list[MutableMapping[str, Any]] = field(default_factory=list[MutableMapping[str, Any]])
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    got_message: asyncio.Event = field(default_factory=asyncio.Event)
    block_on_body: int | None = None  # the body message (1-based) whose send never completes

    async def receive(self) -> MutableMapping[str, Any]:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        bodies = sum(m["type"] == "http.response.body" for m in self.sent)
        if message["type"] == "http.response.body" and bodies + 1 == self.block_on_body:
            await asyncio.Event().wait()
        self.sent.append(message)
        self.got_message.set()

    @property
    def bodies(self) -> list[bytes]:
        return [m["body"] for m in self.sent if m["type"] == "http.response.body"]

    async def wait_for(self, body: bytes) -> None:
        while body not in self.bodies:
            self.got_message.clear()
            await self.got_message.wait()


@dataclass
class Frames:
    """A frames generator that yields `chunks`, then waits on `release`; records its closing."""

    chunks: list[bytes]
    release: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    hold: bool = False  # wait on `release` after the chunks, before ending

    async def __call__(self) -> AsyncGenerator[bytes]:
        try:
            for chunk in self.chunks:
                yield chunk
            if self.hold:
                await self.release.wait()
                yield b"data: after\n\n"
        finally:
            self.closed.set()


def stream(frames: Frames, *, keepalive_s: float = 0, send_timeout_s: float = 30) -> EventStream:
    return EventStream(
        frames(),
        headers={"X-Turn-Id": "t1"},
        keepalive_s=keepalive_s,
        send_timeout_s=send_timeout_s,
    )


async def test_the_frames_go_out_in_order_then_the_response_ends():
    client = Client()
    async with asyncio.timeout(DEADLINE_S):
        await stream(Frames([b"data: a\n\n", b"data: b\n\n"]))(SCOPE, client.receive, client.send)
    start, *rest = client.sent
    assert start["status"] == 200
    assert (b"content-type", MEDIA_TYPE.encode()) in start["headers"]
    assert (b"x-turn-id", b"t1") in start["headers"]
    assert [(m["body"], m["more_body"]) for m in rest] == [
        (b"data: a\n\n", True),
        (b"data: b\n\n", True),
        (b"", False),
    ]


async def test_a_client_that_leaves_while_a_frame_is_awaited_closes_the_frames_at_once():
    client, frames = Client(), Frames([b"data: a\n\n"], hold=True)
    async with asyncio.timeout(DEADLINE_S):
        response = asyncio.create_task(stream(frames)(SCOPE, client.receive, client.send))
        await client.wait_for(b"data: a\n\n")
        client.gone.set()
        await response  # returns: the cancel was the response's own, not re-raised
    assert frames.closed.is_set()
    assert not frames.release.is_set()
    assert client.bodies == [b"data: a\n\n"]  # no end of body for a client that left


async def test_a_client_that_stops_reading_ends_the_stream_after_the_send_timeout(
    caplog: pytest.LogCaptureFixture,
):
    client, frames = (
        Client(block_on_body=2),
        Frames([b"data: a\n\n", b"data: b\n\n", b"data: c\n\n"]),
    )
    async with asyncio.timeout(DEADLINE_S):
        await stream(frames, send_timeout_s=0.01)(SCOPE, client.receive, client.send)
    assert frames.closed.is_set()  # closed at its yield, not left to the garbage collector
    assert client.bodies == [b"data: a\n\n"]
    assert "stopped reading" in caplog.text


async def test_a_silence_longer_than_the_keepalive_interval_sends_a_comment():
    client, frames = Client(), Frames([b"data: a\n\n"], hold=True)
    async with asyncio.timeout(DEADLINE_S):
        response = asyncio.create_task(
            stream(frames, keepalive_s=0.01)(SCOPE, client.receive, client.send)
        )
        await client.wait_for(KEEPALIVE)
        frames.release.set()
        await response
    assert client.bodies[0] == b"data: a\n\n"
    assert client.bodies[-2:] == [b"data: after\n\n", b""]
    assert set(client.bodies[1:-2]) == {KEEPALIVE}


async def test_a_keepalive_that_cannot_be_sent_ends_the_stream(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING)
    client, frames = Client(block_on_body=2), Frames([b"data: a\n\n"], hold=True)
    async with asyncio.timeout(DEADLINE_S):
        await stream(frames, keepalive_s=0.01, send_timeout_s=0.01)(
            SCOPE, client.receive, client.send
        )
    assert frames.closed.is_set()
    assert not frames.release.is_set()
    assert "stopped reading" in caplog.text


async def test_a_cancel_from_outside_is_not_swallowed():
    client, frames = Client(), Frames([b"data: a\n\n"], hold=True)
    async with asyncio.timeout(DEADLINE_S):
        response = asyncio.create_task(stream(frames)(SCOPE, client.receive, client.send))
        await client.wait_for(b"data: a\n\n")
        response.cancel()  # a server shutdown
        with pytest.raises(asyncio.CancelledError):
            await response
    assert frames.closed.is_set()


async def test_ending_a_stream_closes_the_frames_then_sends_its_last_words():
    client, frames, streams = Client(), Frames([b"data: a\n\n"], hold=True), OpenStreams()
    response = EventStream(
        frames(),
        headers={},
        keepalive_s=0,
        open_streams=streams,
        last_words=lambda: b"data: bye\n\n",
    )
    async with asyncio.timeout(DEADLINE_S):
        task = asyncio.create_task(response(SCOPE, client.receive, client.send))
        await client.wait_for(b"data: a\n\n")
        assert len(streams) == 1
        streams.end_all()  # a server shutdown
        await task
    assert frames.closed.is_set()
    assert not frames.release.is_set()
    assert client.bodies == [b"data: a\n\n", b"data: bye\n\n", b""]
    assert len(streams) == 0


async def test_ending_a_finished_stream_changes_nothing():
    client, streams = Client(), OpenStreams()
    response = EventStream(
        Frames([b"data: a\n\n"])(), headers={}, keepalive_s=0, open_streams=streams
    )
    async with asyncio.timeout(DEADLINE_S):
        await response(SCOPE, client.receive, client.send)
    response.end()
    streams.end_all()
    assert client.bodies == [b"data: a\n\n", b""]
    assert len(streams) == 0


async def test_a_client_leaving_as_the_stream_is_ended_is_one_cancel_not_an_error():
    """Regression: a shutdown's `end` and a disconnect in the same instant cancelled the
    response twice, and the second cancel escaped it as an error."""
    client, frames, streams = Client(), Frames([b"data: a\n\n"], hold=True), OpenStreams()
    response = EventStream(frames(), headers={}, keepalive_s=0, open_streams=streams)
    async with asyncio.timeout(DEADLINE_S):
        task = asyncio.create_task(response(SCOPE, client.receive, client.send))
        await client.wait_for(b"data: a\n\n")
        client.gone.set()  # the watch wakes first, then the response
        streams.end_all()
        await task  # returns: no CancelledError
    assert frames.closed.is_set()
    assert client.bodies == [b"data: a\n\n"]  # nothing more for a client that left
