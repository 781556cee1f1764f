"""servekit.limits.RequestLimits on a fake ASGI app: what it refuses, and what the app
then receives."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.types import Message

from servekit.limits import RequestLimits

DEADLINE_S = 5.0


@dataclass
class FakeApp:
    received: list[Message] = field(default_factory=list[Message])
    called: bool = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.called = True
        self.received.append(await receive())
        self.received.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def error_body(status: int, message: str) -> bytes:
    return json.dumps({"status": status, "detail": message}).encode()


def scope(headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/x", "headers": headers or []}


async def run(limits: RequestLimits, messages: list[Message], hang: bool = False, **sc: Any):
    """Drive `limits` with `messages` (then a disconnect, or nothing ever if `hang`)."""
    pending = list(messages)
    never = asyncio.Event()
    reads = 0

    async def receive() -> Message:
        nonlocal reads
        reads += 1
        if pending:
            return pending.pop(0)
        if hang:
            await never.wait()
        return {"type": "http.disconnect"}

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async with asyncio.timeout(DEADLINE_S):
        await limits(scope(**sc), receive, send)
    return sent, reads


def status_and_detail(sent: list[Message]) -> tuple[int, str]:
    body = json.loads(sent[1]["body"])
    assert body["status"] == sent[0]["status"]
    return sent[0]["status"], body["detail"]


def body_part(data: bytes, more: bool = False) -> Message:
    return {"type": "http.request", "body": data, "more_body": more}


async def test_headers_over_the_limit_are_a_431_and_the_app_is_not_called():
    app = FakeApp()
    limits = RequestLimits(app, error_body=error_body, max_header_bytes=100)
    sent, reads = await run(limits, [body_part(b"{}")], headers=[(b"x-big", b"a" * 200)])
    assert status_and_detail(sent) == (431, "The request headers are over 100 bytes.")
    assert (app.called, reads) == (False, 0)


async def test_a_declared_length_over_the_limit_is_a_413_before_any_byte_is_read():
    app = FakeApp()
    limits = RequestLimits(app, error_body=error_body, max_body_bytes=10)
    sent, reads = await run(limits, [body_part(b"x")], headers=[(b"content-length", b"11")])
    assert status_and_detail(sent) == (413, "The request body is larger than 10 bytes.")
    assert (app.called, reads) == (False, 0)


async def test_a_body_that_grows_past_the_limit_is_a_413():
    app = FakeApp()
    limits = RequestLimits(app, error_body=error_body, max_body_bytes=10)
    sent, _ = await run(limits, [body_part(b"123456", more=True), body_part(b"7890a")])
    assert status_and_detail(sent)[0] == 413
    assert not app.called


async def test_a_body_that_never_arrives_whole_is_a_408():
    """Regression (issue 12): a body shorter than its Content-Length was held for 90 s."""
    app = FakeApp()
    limits = RequestLimits(app, error_body=error_body, body_timeout_s=0.05)
    sent, _ = await run(limits, [body_part(b'{"mess', more=True)], hang=True)
    assert status_and_detail(sent) == (408, "The request body did not arrive within 0.05 s.")
    assert not app.called
    assert (b"connection", b"close") in sent[0]["headers"]


async def test_the_app_gets_the_whole_body_at_once_then_the_real_messages():
    app = FakeApp()
    limits = RequestLimits(app, error_body=error_body, max_body_bytes=100)
    sent, _ = await run(limits, [body_part(b'{"a":', more=True), body_part(b" 1}")])
    assert app.received == [body_part(b'{"a": 1}'), {"type": "http.disconnect"}]
    assert sent[0]["status"] == 200


async def test_a_client_gone_mid_body_is_passed_on_to_the_app():
    app = FakeApp()
    limits = RequestLimits(app, error_body=error_body, max_body_bytes=100)
    await run(limits, [body_part(b'{"a":', more=True)])
    assert app.received == [body_part(b'{"a":'), {"type": "http.disconnect"}]


@pytest.mark.parametrize("kind", ["websocket", "lifespan"])
async def test_other_scopes_pass_through_untouched(kind: str):
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    limits = RequestLimits(app, error_body=error_body, max_header_bytes=0)
    await limits({"type": kind, "headers": [(b"x", b"y")]}, None, None)  # type: ignore[arg-type]
    assert seen == [kind]


async def test_with_no_body_limits_the_app_reads_the_body_itself():
    app = FakeApp()
    limits = RequestLimits(app, error_body=error_body, body_timeout_s=None)
    await run(limits, [body_part(b"a", more=True), body_part(b"b")])
    assert app.received == [body_part(b"a", more=True), body_part(b"b")]
