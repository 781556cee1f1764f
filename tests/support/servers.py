"""Start the mock LLM, the notes app and the guard proxy in-process on free 127.0.0.1 ports
(for conftests and tests), and a scripted upstream that answers with raw bytes, for faults
the mock cannot play (a connection closed without an answer, a body broken after its end;
`writing_upstream`: an answer chosen by the request and written piece by piece, such as a
stream of many megabytes).
"""

from __future__ import annotations

import asyncio
import socket
import socketserver
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from guard.bare.server import serve as bare_serve
from guard.http.server import GuardSettings
from guard.http.server import create_app as create_guard
from scaffold_guard.app.config import Settings, load_settings
from scaffold_guard.app.main import create_app
from servekit.in_thread import serve_in_thread
from servekit.listen import bind_socket, socket_url

from .deadlines import DEADLINE_S, POLL_S

TEST_FLOWS = Path(__file__).parents[1] / "fixtures" / "flows.yaml"


def app_settings(mock_url: str, data_dir: Path, **env: str) -> Settings:
    """Settings for an app whose model is the mock at `mock_url`, with fast retries."""
    return load_settings(
        {
            "SG_LLM_BASE_URL": f"{mock_url}/v1",
            "SG_DATA_DIR": str(data_dir),
            "SG_LLM_RETRY_DELAY_S": "0.01",
            "SG_LLM_TIMEOUT_S": "10",
            **env,
        }
    )


@contextmanager
def serve_app(settings: Settings) -> Generator[str]:
    config = uvicorn.Config(create_app(settings), log_level="warning", timeout_graceful_shutdown=1)
    with serve_in_thread(config) as url:
        yield url


@contextmanager
def serve_guard(upstream: str, **settings: Any) -> Generator[str]:
    """The guard proxy in front of the model server at `upstream` (`settings`: any other
    than the defaults, such as `keepalive_s`)."""
    guard = create_guard(GuardSettings(upstream=upstream, **settings))
    config = uvicorn.Config(guard, log_level="warning")
    with serve_in_thread(config) as url:
        yield url


LAST_CHUNK = b"0\r\n\r\n"
"""The chunk that ends a chunked body (without it, the connection closes mid-body)."""


def chunked_head(content_type: str = "text/event-stream", *headers: str) -> bytes:
    """The head of a 200 answer with a chunked body, as raw HTTP/1.1 (`headers`: more
    `name: value` lines)."""
    lines = [f"content-type: {content_type}", "transfer-encoding: chunked", *headers]
    return ("HTTP/1.1 200 OK\r\n" + "".join(f"{line}\r\n" for line in lines)).encode() + (
        b"connection: close\r\n\r\n"
    )


def chunk_of(piece: bytes) -> bytes:
    """`piece` as one chunk of a chunked body."""
    return f"{len(piece):x}\r\n".encode() + piece + b"\r\n"


def chunked_answer(
    body: bytes, *, end: bytes = LAST_CHUNK, content_type: str = "text/event-stream"
) -> bytes:
    """A 200 answer with `body` as one chunk, then `end`, as raw HTTP/1.1."""
    return chunked_head(content_type) + chunk_of(body) + end


def chunked_stream(
    pieces: Iterable[bytes], content_type: str = "text/event-stream", *headers: str
) -> Iterator[bytes]:
    """A 200 answer whose body is `pieces`, each its own chunk (and its own write)."""
    yield chunked_head(content_type, *headers)
    for piece in pieces:
        yield chunk_of(piece)
    yield LAST_CHUNK


def whole_answer(body: bytes, content_type: str = "application/json") -> bytes:
    """A 200 answer with `body` and its length, as raw HTTP/1.1."""
    head = f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
    return head.encode() + b"connection: close\r\n\r\n" + body


@contextmanager
def scripted_upstream(answers: Sequence[bytes | None]) -> Generator[str]:
    """A loopback server that answers its n-th request with `answers[n]` as raw bytes and
    closes the connection (at once, without a byte, for None)."""
    served = iter(answers)

    def answer(body: bytes) -> list[bytes]:
        del body  # the order of the requests decides
        one = next(served, None)
        return [] if one is None else [one]

    with writing_upstream(answer) as url:
        yield url


@contextmanager
def writing_upstream(answer: Callable[[bytes], Iterable[bytes]]) -> Generator[str]:
    """A loopback server that answers each request with the raw bytes `answer(its body)`
    yields, one write each, then closes the connection; a client that left ends the
    writing (and the iterable is closed)."""

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            length = 0
            while (line := self.rfile.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            pieces = iter(answer(self.rfile.read(length)))
            try:
                for piece in pieces:
                    self.wfile.write(piece)
                self.request.shutdown(socket.SHUT_RDWR)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client left: nothing more to write
            finally:
                if isinstance(pieces, Generator):
                    pieces.close()

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # serve_forever looks for shutdown() every poll_interval (0.5 s by default, which each
    # test's upstream took to stop)
    poll = {"poll_interval": POLL_S}
    thread = threading.Thread(target=server.serve_forever, kwargs=poll, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_bare_guard(upstream: str, **settings: Any) -> Generator[str]:
    """The guard proxy's bare-install server (guard/bare) in front of `upstream`, on its
    own event loop in a background thread (`settings`: as serve_guard's)."""
    sock = bind_socket("127.0.0.1", 0)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    served = bare_serve(sock, GuardSettings(upstream=upstream, **settings), stop)
    thread = threading.Thread(target=loop.run_until_complete, args=(served,), daemon=True)
    thread.start()
    try:
        yield socket_url(sock)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=DEADLINE_S)
        loop.close()
        sock.close()
