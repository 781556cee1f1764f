"""Several worker processes serving one listening socket (`python -m guard --workers N`).

The socket is bound once, by the parent; each of N forked children serves it with an
event loop, an app and an upstream pool of its own, and the kernel hands each new
connection to one of them. That is only sound for a server that keeps no state between
requests (any worker may take any request), as the guard proxy is. The parent only
supervises: SIGTERM or SIGINT is passed on to every worker as SIGTERM (each shuts down
gracefully; a terminal's Ctrl-C reaches them too, and a second SIGINT would force them),
and once one worker has exited the rest are stopped and the parent exits with the first
one's status, so whatever runs the server (systemd, a container runtime) sees it and can
restart the whole; a worker is never restarted behind its back.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType

__all__ = ["serve_workers"]

FORWARDED = (signal.SIGTERM, signal.SIGINT)


def serve_workers(count: int, serve: Callable[[], None]) -> int:
    """Fork `count` workers, each running `serve()` (which builds its app inside the child
    and serves the inherited socket until told to stop); 0 once they have stopped as the
    parent was told to (a worker ends by the SIGTERM uvicorn re-raises), else the exit
    status of the first worker that ended on its own (128 + the signal that ended it)."""
    running: set[int] = set()
    asked: list[int] = []  # the signal that told the parent to stop, if one did

    def stop_all() -> None:
        for pid in list(running):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # never a second SIGINT: uvicorn forces on that

    def told_to_stop(signum: int, frame: FrameType | None) -> None:
        del frame
        asked.append(signum)
        stop_all()

    for signum in FORWARDED:  # before the forks: no signal is lost in between
        signal.signal(signum, told_to_stop)
    for _ in range(count):
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os._exit(_worker(serve))
        running.add(pid)
    status: int | None = None
    while running:
        pid, wait_status = os.wait()
        running.discard(pid)
        if status is None:
            code = os.waitstatus_to_exitcode(wait_status)
            status = code if code >= 0 else 128 - code
            stop_all()  # one worker gone: the others go too
    return 0 if asked else status or 0


def _worker(serve: Callable[[], None]) -> int:
    for signum in FORWARDED:
        signal.signal(signum, signal.SIG_DFL)  # the server installs its own
    try:
        serve()
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # the worker's exit status says it, and the trace
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return 0
