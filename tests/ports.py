"""A loopback port that is already taken, for testing how servers report it."""

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
