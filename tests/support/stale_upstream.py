"""A model server that closes every kept-alive connection the moment its next request arrives.

The race of issue 29, made deterministic. A real server (uvicorn's default keep-alive is
5 s) closes an idle connection on its own clock, and a client that picks that connection
from its pool in the same instant loses the request before any byte of the answer comes:
`ServerDisconnectedError`, `ClientOSError`, httpx's `RemoteProtocolError`. Here no clock
takes part: every connection answers its first request (`Connection: keep-alive`, the body
read whole so the client pools it) and closes, unanswered, on the first bytes of its second.
So every request a client sends on a reused connection meets the race, every time, and a
client that sends its retry on a fresh connection is answered.

`serve_stale_upstream()` serves it on a free loopback port in a thread of its own and
yields a `StaleUpstream` (its URL, and how many requests it answered and dropped). It
answers `POST .../chat/completions` (OpenAI: SSE when the body says `"stream": true`, else
one JSON completion), `POST .../responses` (the Responses API: typed events when the body
says `"stream": true`, else one response), `POST .../messages` (Anthropic's Messages API,
the same way, as the mock writes it), `POST /api/chat` (Ollama: NDJSON unless
`"stream": false`) and anything else with a small JSON body; the answer text is `ANSWER`,
or the next of `script` while it has any (markup, to play a recovery; None: that
connection is closed unanswered instead).
Set `answering` to False and it closes every new connection unanswered once its first
request came (a server that takes connections and drops them), counted in `unanswered`.
Every count is made before the client can see its outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mock_llm.flows.model import Step
from mock_llm.wire import anthropic as anthropic_wire
from mock_llm.wire.openai import CompletionMeta
from servekit.json_codec import dumps

from .deadlines import DEADLINE_S

ANSWER = "Backups run nightly at 02:00."
MAX_HEAD_BYTES = 64 * 1024


@dataclass
class StaleUpstream:
    url: str = ""
    answered: int = 0  # requests answered (each a connection's first)
    dropped: int = 0  # connections closed on the first bytes of their second request
    unanswered: int = 0  # first requests closed unanswered while `answering` is False
    answering: bool = True
    paths: list[str] = field(default_factory=list[str])
    script: list[str | None] = field(default_factory=list[str | None])  # see the docstring


def _answer(path: str, body: bytes, text: str) -> tuple[str, bytes]:
    """The content type and body for one request, whose answer text is `text`."""
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        request = {}
    request = request if isinstance(request, dict) else {}
    if path.endswith("/chat/completions"):
        base = {"id": "chatcmpl-stale", "object": "chat.completion.chunk", "created": 1,
                "model": "stale"}  # fmt: skip
        if request.get("stream"):
            chunks = [
                {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                      "finish_reason": None}]},
                {**base, "choices": [{"index": 0, "delta": {"content": text},
                                      "finish_reason": None}]},
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]  # fmt: skip
            events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
            return "text/event-stream", (events + "data: [DONE]\n\n").encode()
        whole = {**base, "object": "chat.completion", "choices": [{"index": 0, "message": {
            "role": "assistant", "content": text}, "finish_reason": "stop"}]}  # fmt: skip
        return "application/json", json.dumps(whole).encode()
    if path.endswith("/responses"):
        return _responses_answer(bool(request.get("stream")), text)
    if path.endswith("/messages"):
        return _messages_answer(bool(request.get("stream")), text)
    if path == "/api/chat":
        line = {"model": "stale", "created_at": "2026-01-01T00:00:00Z", "done": False,
                "message": {"role": "assistant", "content": text}}  # fmt: skip
        last = {"model": "stale", "created_at": "2026-01-01T00:00:00Z", "done": True,
                "done_reason": "stop", "message": {"role": "assistant", "content": ""}}  # fmt: skip
        if request.get("stream") is False:
            return "application/json", json.dumps({**last, "message": line["message"]}).encode()
        return "application/x-ndjson", f"{json.dumps(line)}\n{json.dumps(last)}\n".encode()
    return "application/json", b'{"object": "list", "data": []}'


def _responses_answer(stream: bool, text: str) -> tuple[str, bytes]:
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {"id": "msg_stale", "type": "message", "role": "assistant", "status": "completed",
            "content": [part]}  # fmt: skip
    done = {"id": "resp_stale", "object": "response", "created_at": 1, "status": "completed",
            "model": "stale", "output": [item]}  # fmt: skip
    if not stream:
        return "application/json", json.dumps(done).encode()
    at = {"item_id": "msg_stale", "output_index": 0, "content_index": 0}
    events = [
        ("response.created", {"response": {**done, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"output_index": 0, "item": {
            **item, "status": "in_progress", "content": []}}),
        ("response.content_part.added", {**at, "part": {**part, "text": ""}}),
        ("response.output_text.delta", {**at, "delta": text}),
        ("response.output_text.done", {**at, "text": text}),
        ("response.content_part.done", {**at, "part": part}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": done}),
    ]  # fmt: skip
    body = "".join(
        f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': n, **data})}\n\n"
        for n, (kind, data) in enumerate(events)
    )
    return "text/event-stream", body.encode()


def _messages_answer(stream: bool, text: str) -> tuple[str, bytes]:
    """Anthropic's Messages API answer, as the mock writes it (without its pauses)."""
    step, meta = Step(content=text), CompletionMeta(id="chatcmpl-stale", created=1, model="stale")
    if not stream:
        return "application/json", dumps(anthropic_wire.message(step, meta, []))
    return "text/event-stream", b"".join(e for _, e in anthropic_wire.stream_events(step, meta, []))


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    """One request's path and body, or None when the client closed first."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip() or 0)
    try:
        body = await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return path, body


@contextmanager
def serve_stale_upstream() -> Generator[StaleUpstream]:
    state = StaleUpstream()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: asyncio.Future[None] | None = None
    handlers: set[asyncio.Task[None]] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        if handler is not None:
            handlers.add(handler)
        try:
            request = await _read_request(reader)
            if request is None:
                return
            text = state.script.pop(0) if state.script and state.answering else ANSWER
            if not state.answering or text is None:
                state.unanswered += 1
                return
            path, body = request
            state.paths.append(path)
            kind, answer = _answer(path, body, text)
            state.answered += 1  # before the answer goes: a client that has it sees the count
            writer.write(
                f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {len(answer)}\r\n"
                "connection: keep-alive\r\nkeep-alive: timeout=75\r\n\r\n".encode()
                + answer
            )
            await writer.drain()
            # The next request's first bytes: the server "had just" closed it.
            if await reader.read(1):
                state.dropped += 1
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()  # its transport closed before the loop is
            handlers.discard(handler)

    async def main() -> None:
        nonlocal stop
        server = await asyncio.start_server(
            connection, "127.0.0.1", 0, limit=MAX_HEAD_BYTES, reuse_address=True
        )
        port = server.sockets[0].getsockname()[1]
        state.url = f"http://127.0.0.1:{port}"
        stop = loop.create_future()
        ready.set()
        async with server:
            await stop
        for handler in list(handlers):  # connections a client still holds in its pool
            handler.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    if not ready.wait(DEADLINE_S):
        raise RuntimeError("the stale upstream did not start")
    try:
        yield state
    finally:
        loop.call_soon_threadsafe(lambda: stop is not None and stop.set_result(None))
        thread.join(DEADLINE_S)
        loop.close()
