"""A hostile model server: each request is answered by a script of raw body pieces, written
one chunk each for as long as the script goes on and the client reads (issue 27).

`serve_hostile_upstream(scripts)` serves on a free loopback port in a thread of its own and
yields a `HostileUpstream`. A request whose body holds `[[hostile:NAME]]` is answered by
`scripts[NAME]()` (a 200 `text/event-stream` in chunked encoding, `Content-Encoding: gzip`
when the script says so, whatever the request accepts); any other by a clean stream
answering `CLEAN_ANSWER`, so a concurrent normal client can be checked on the same server.
A script may be endless: the writing stops when the client closes. `sent[NAME]` counts the
body bytes written and `digest[NAME]` hashes them, for a client to compare; `ended[NAME]`
is set once the answer ended (written whole, or its client gone).

The scripts are here too: `long_line`, `opener_without_end`, `invalid_utf8`,
`split_character`, `many_choices`, `gzip_bomb`; `ENDLESS` names one of each case (for a
client that stops reading: the opener and the bomb never end), `ending()` the same with
an end (for a client that reads everything, as the recorder's does).
"""

from __future__ import annotations

import hashlib
import re
import socket
import socketserver
import threading
import zlib
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

from servekit.json_codec import dumps

from .deadlines import POLL_S

CLEAN_ANSWER = "Backups run nightly at 02:00."
MiB = 1 << 20
_NAME = re.compile(rb"\[\[hostile:([a-z0-9-]+)\]\]")


@dataclass(frozen=True)
class Script:
    """The body pieces of one answer, and whether they are gzip (the header says so)."""

    pieces: Callable[[], Iterator[bytes]]
    gzip: bool = False


@dataclass
class HostileUpstream:
    url: str = ""
    sent: dict[str, int] = field(default_factory=dict[str, int])
    digest: dict[str, str] = field(default_factory=dict[str, str])
    """The sha256 of each answer's body as written (complete once the answer ended)."""
    ended: dict[str, threading.Event] = field(default_factory=dict[str, threading.Event])


def chunk(content: str | None = None, *, index: int = 0, finish: str | None = None) -> bytes:
    """One chat-completion chunk event with `content` in choice `index`."""
    delta = {} if content is None else {"content": content}
    choice = {"index": index, "delta": delta, "finish_reason": finish}
    return b"data: " + dumps({"object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"


def clean_stream(text: str = CLEAN_ANSWER) -> Iterator[bytes]:
    yield chunk(text)
    yield chunk(finish="stop")
    yield b"data: [DONE]\n\n"


def long_line(total: int = 50 * MiB, piece: int = 64 * 1024) -> Iterator[bytes]:
    """`data: ` and then `total` bytes of `x` with no line end."""
    yield b"data: "
    for _ in range(total // piece):
        yield b"x" * piece


def opener_without_end(text: str = "x" * 1000, count: int | None = None) -> Iterator[bytes]:
    """A tool-call opener, then `count` content chunks of `text` (None: for ever), no end
    marker, then a clean end."""
    yield chunk("<|tool_call_start|>")
    event = chunk(text)
    sent = 0
    while count is None or sent < count:
        yield event
        sent += 1
    yield from clean_stream("")


INVALID = b"bad \xff\xfe bytes"
INVALID_SHOWN = "bad \ufffd\ufffd bytes"
SPLIT_TEXT = "Backups run at 02:00 — nightly."


def invalid_utf8() -> Iterator[bytes]:
    """Content holding bytes that are not UTF-8, then a clean end."""
    yield chunk("X").replace(b"X", INVALID)
    yield from clean_stream("")


def split_character() -> Iterator[bytes]:
    """`SPLIT_TEXT` in one chunk cut inside its three-byte dash, over two pieces."""
    event = chunk(SPLIT_TEXT)
    cut = event.index("—".encode()) + 1
    yield event[:cut]
    yield event[cut:]
    yield from clean_stream("")


def many_choices(count: int = 10_000) -> Iterator[bytes]:
    """Choices 1..count-1 each say `LEAK n` and finish; choice 0 answers `CLEAN_ANSWER`."""
    for index in range(1, count):
        yield chunk(f"LEAK {index}", index=index, finish="stop")
    yield from clean_stream()


LONG_COMMENT = b": " + b"z" * 1020 + b"\n\n"
"""An SSE comment line of 1 KiB: a bomb of these inflates as far with a seventieth of the
lines to read."""


def gzip_bomb(block: bytes = b": keep-alive\n\n", blocks: int | None = None) -> Iterator[bytes]:
    """A gzip stream of `block` repeated, in blocks of 1 MiB decoded (`blocks` of them;
    None: for ever), each flushed: a few kilobytes on the wire for every megabyte."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    big = block * max(1, MiB // len(block))
    sent = 0
    while blocks is None or sent < blocks:
        yield packer.compress(big) + packer.flush(zlib.Z_SYNC_FLUSH)
        sent += 1
    yield packer.flush()


ENDLESS = {
    "long-line": Script(long_line),  # 50 MB without a newline
    "opener": Script(opener_without_end),
    "invalid-utf8": Script(invalid_utf8),
    "split-character": Script(split_character),
    "many-choices": Script(many_choices),
    "gzip-bomb": Script(gzip_bomb, gzip=True),
}


def ending(opener_chunks: int, bomb_mib: int) -> dict[str, Script]:
    """`ENDLESS` with an end: the opener's chunks of 1,000 characters, the bomb's MiB."""
    return {
        **ENDLESS,
        "opener": Script(partial(opener_without_end, count=opener_chunks)),
        "gzip-bomb": Script(partial(gzip_bomb, blocks=bomb_mib), gzip=True),
    }


def _head(gzip: bool) -> bytes:
    coding = "content-encoding: gzip\r\n" if gzip else ""
    return (
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        f"{coding}transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    ).encode()


@contextmanager
def serve_hostile_upstream(scripts: Mapping[str, Script]) -> Generator[HostileUpstream]:
    upstream = HostileUpstream()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            length = 0
            while (line := self.rfile.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            found = _NAME.search(self.rfile.read(length))
            name = found.group(1).decode() if found else "clean"
            script = scripts[name] if found else Script(clean_stream)
            upstream.sent.setdefault(name, 0)
            ended = upstream.ended.setdefault(name, threading.Event())
            digest = hashlib.sha256()
            try:
                self.wfile.write(_head(script.gzip))
                for piece in script.pieces():
                    if piece:
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        upstream.sent[name] += len(piece)
                        digest.update(piece)
                self.wfile.write(b"0\r\n\r\n")
                self.request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the client closed: the script ends here
            finally:
                upstream.digest[name] = digest.hexdigest()
                ended.set()

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    poll = {"poll_interval": POLL_S}  # how soon shutdown() is seen (0.5 s by default)
    thread = threading.Thread(target=server.serve_forever, kwargs=poll, daemon=True)
    thread.start()
    upstream.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield upstream
    finally:
        server.shutdown()
        server.server_close()
