"""Loopback ports for tests: one already taken (how servers report it), one that refuses."""

from __future__ import annotations

import socket
from collections.abc import Generator
from contextlib import contextmanager


@contextmanager
def taken_port() -> Generator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


@contextmanager
def refusing_port() -> Generator[int]:
    """A loopback port held (bound, never listening): a connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def free_port() -> int:
    """A loopback port free a moment ago, for a child that binds it itself (a third-party
    server with no `--port 0`); another process could take it first, so use it at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
