"""A TCP relay that keeps every byte an upstream server sent, read back as HTTP exchanges.

`tapping(upstream_port)` listens on a free loopback port and relays each connection to the
upstream, both ways, as it comes; `Tap.exchanges()` reads what passed as HTTP/1.1 with h11
(the requests parsed as a server would, the responses as their client would, so chunked
bodies are joined and keep-alive connections give each exchange in turn). A test puts it
between the guard and a real server to compare what the guard sent its client with what
the server really sent, byte for byte, where the server's answer differs every time (ids,
timings) and cannot be asked for twice.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

import h11

CHUNK = 65536


@dataclass(frozen=True)
class Exchange:
    """One request and the response the upstream gave it, bodies joined."""

    method: str
    target: str
    request_body: bytes
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class _Connection:
    sent: bytearray = field(default_factory=bytearray)  # client to upstream
    received: bytearray = field(default_factory=bytearray)  # upstream to client
    arrivals: list[tuple[float, int]] = field(default_factory=list[tuple[float, int]])
    """When each read from the upstream came (perf_counter) and how many bytes it ended at."""
    closed_first_by: str = ""  # "client" or "upstream": whose end of it closed first


class Tap:
    def __init__(self, upstream_port: int) -> None:
        self._upstream = ("127.0.0.1", upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._connections: list[_Connection] = []
        self._lock = threading.Lock()

    def serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            record = _Connection()
            with self._lock:
                self._connections.append(record)
            thread = threading.Thread(target=self._relay, args=(client, record), daemon=True)
            thread.start()

    def _relay(self, client: socket.socket, record: _Connection) -> None:
        """Both directions of one connection, then both sockets closed."""
        with client, socket.create_connection(self._upstream) as upstream:
            back = threading.Thread(
                target=_pump, args=(upstream, client, record.received, record, "upstream")
            )
            back.start()
            _pump(client, upstream, record.sent, record, "client")
            back.join()

    def upstream_reads(self) -> list[tuple[bytes, list[tuple[float, int]]]]:
        """Each connection's bytes from the upstream, with when each read of them came."""
        with self._lock:
            return [(bytes(c.received), list(c.arrivals)) for c in self._connections]

    def closed_by_upstream(self) -> int:
        """How many connections the upstream closed before its client did."""
        with self._lock:
            return sum(c.closed_first_by == "upstream" for c in self._connections)

    def close(self) -> None:
        self._listener.close()

    def exchanges(self) -> list[Exchange]:
        """Every complete exchange so far, connection by connection."""
        with self._lock:
            connections = [(bytes(c.sent), bytes(c.received)) for c in self._connections]
        return [e for sent, received in connections for e in _read_exchanges(sent, received)]


def _pump(source: socket.socket, target: socket.socket, into: bytearray, record: _Connection,
          side: str) -> None:  # fmt: skip
    """One direction, as a TCP proxy relays it: a clean end (EOF) is passed on as a
    half-close, so the other direction still brings what its peer had left to send (a
    server's chunked body's last bytes, after a client that had read enough closed); a
    broken connection ends both."""
    ends = (target,)
    try:
        while data := source.recv(CHUNK):
            into += data
            if side == "upstream":
                record.arrivals.append((time.perf_counter(), len(into)))
            target.sendall(data)
        how = socket.SHUT_WR
    except OSError:
        how, ends = socket.SHUT_RDWR, (source, target)
    record.closed_first_by = record.closed_first_by or side
    for end in ends:
        with suppress(OSError):
            end.shutdown(how)


def _read_exchanges(sent: bytes, received: bytes) -> list[Exchange]:
    server, client = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
    server.receive_data(sent)
    client.receive_data(received)
    exchanges: list[Exchange] = []
    while True:
        request, request_body = _next_request(server)
        if request is None:
            return exchanges
        client.send(request)
        if request_body:
            client.send(h11.Data(data=request_body))
        client.send(h11.EndOfMessage())
        response, body = _next_response(client)
        if response is None:
            return exchanges
        exchanges.append(
            Exchange(
                request.method.decode(),
                request.target.decode(),
                request_body,
                response.status_code,
                {k.decode(): v.decode() for k, v in response.headers},
                body,
            )
        )
        if client.our_state is not h11.DONE or client.their_state is not h11.DONE:
            return exchanges
        server.start_next_cycle()
        client.start_next_cycle()


def _next_request(server: h11.Connection) -> tuple[h11.Request | None, bytes]:
    request, body = None, bytearray()
    while True:
        event = server.next_event()
        if isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            server.send(h11.Response(status_code=200, headers=[("content-length", "0")]))
            server.send(h11.EndOfMessage())
            return request, bytes(body)
        else:  # NEED_DATA, PAUSED, ConnectionClosed: no whole request left
            return None, b""


def _next_response(client: h11.Connection) -> tuple[h11.Response | None, bytes]:
    response, body = None, bytearray()
    while True:
        event = client.next_event()
        if isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return response, bytes(body)
        elif event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
            return None, b""  # an answer still coming, or cut off


@contextmanager
def tapping(upstream_port: int) -> Generator[Tap]:
    tap = Tap(upstream_port)
    thread = threading.Thread(target=tap.serve, daemon=True)
    thread.start()
    try:
        yield tap
    finally:
        tap.close()
        thread.join(timeout=10)
