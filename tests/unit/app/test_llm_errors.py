"""scaffold_guard.app.rag.llm.errors: what a failed request or a broken stream tells the user.
Pure."""

from __future__ import annotations

import aiohttp
import pytest

from scaffold_guard.app.rag.llm.errors import (
    MSG_CUT,
    MSG_FAILED,
    MSG_MALFORMED,
    MSG_TIMEOUT,
    MSG_UNREACHABLE,
    request_error,
    stream_error,
)
from servekit.sse import LineTooLong


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (TimeoutError(), MSG_TIMEOUT),
        (ConnectionRefusedError("refused"), MSG_UNREACHABLE),
        (aiohttp.ServerDisconnectedError(), MSG_UNREACHABLE),
        (aiohttp.SocketTimeoutError("slow"), MSG_TIMEOUT),
        (ValueError("odd"), MSG_FAILED),
    ],
)
def test_request_errors_map_to_plain_messages(exc: Exception, message: str) -> None:
    assert request_error(exc).message == message


@pytest.mark.parametrize(
    ("exc", "message", "retryable"),
    [
        (aiohttp.ClientPayloadError("Response payload is not completed"), MSG_CUT, True),
        (aiohttp.ServerDisconnectedError(), MSG_CUT, True),
        (aiohttp.SocketTimeoutError("slow"), MSG_TIMEOUT, True),
        (TimeoutError(), MSG_TIMEOUT, True),
        (LineTooLong("too long"), MSG_MALFORMED, False),
        (ValueError("crashed"), MSG_FAILED, False),
    ],
)
def test_stream_errors_map_to_plain_messages(exc: Exception, message: str, retryable: bool) -> None:
    error = stream_error(exc)
    assert (error.message, error.retryable) == (message, retryable)
