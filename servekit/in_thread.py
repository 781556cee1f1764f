"""`serve_in_thread`: any ASGI app served by uvicorn in a background thread on a free port,
for a program or a test that embeds a server (the app's demo mock, the kit's reference
stack, the test suites' servers).

The socket is bound before the server starts, so there is no race between picking a port
and binding it; the base URL is yielded once the server answers, and the server is stopped
on exit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from contextlib import contextmanager

import uvicorn

from servekit.listen import bind_socket, socket_url

__all__ = ["STARTUP_TIMEOUT_S", "serve_in_thread"]

STARTUP_TIMEOUT_S = 10.0


@contextmanager
def serve_in_thread(config: uvicorn.Config, host: str = "127.0.0.1") -> Generator[str]:
    """Serve `config` with uvicorn in a background thread on a free port of `host`; yields
    the base URL, e.g. http://127.0.0.1:43121, and stops the server on exit."""
    sock = bind_socket(host, 0)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield socket_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=STARTUP_TIMEOUT_S)
        sock.close()
