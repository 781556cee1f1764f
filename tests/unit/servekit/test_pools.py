"""The connection pools' pure parts (servekit.pool, servekit.httpx_pool): which errors mean
a stale pooled connection and what a failure's log fields say. That servekit imports none
of the packages that use it is tests/unit/project/test_dependency_rule.py's."""

from __future__ import annotations

import errno
from typing import Any, cast

import aiohttp
import httpx
import pytest
from aiohttp.client_reqrep import ConnectionKey

from servekit.httpx_pool import STALE_ERRORS
from servekit.pool import RequestFailed, stale

KEY = ConnectionKey("127.0.0.1", 1, False, True, None, None, None)
REFUSED = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")


@pytest.mark.parametrize(
    ("error", "is_stale"),
    [
        (aiohttp.ServerDisconnectedError(), True),
        (aiohttp.ClientOSError(errno.ECONNRESET, "Connection reset by peer"), True),
        (aiohttp.ClientOSError(errno.EPIPE, "Broken pipe"), True),
        (aiohttp.ClientConnectionResetError("Cannot write to closing transport"), True),
        (ConnectionResetError("Cannot write to closing transport"), True),  # aiohttp < 3.10.6
        # part of a response head had come: the server had answered
        (aiohttp.ServerDisconnectedError(cast(Any, object())), False),
        # a connect refused or failed: no stale connection, the server's own answer
        (aiohttp.ClientConnectorError(KEY, REFUSED), False),
        (aiohttp.ClientPayloadError("Response payload is not completed"), False),
        (aiohttp.SocketTimeoutError("Timeout on reading data from socket"), False),
        (aiohttp.ConnectionTimeoutError("Connection timeout"), False),
        (TimeoutError(), False),
        (aiohttp.InvalidURL("nowhere"), False),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_only_a_disconnect_or_reset_before_the_answer_is_a_stale_connection(
    error: Exception, is_stale: bool
):
    assert stale(error) is is_stale


def test_the_httpx_stale_errors_are_a_disconnect_a_read_and_a_write_never_a_connect():
    assert set(STALE_ERRORS) == {httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError}
    assert not issubclass(httpx.ConnectError, STALE_ERRORS)
    assert not issubclass(httpx.ConnectTimeout, STALE_ERRORS)


@pytest.mark.parametrize(
    ("reused", "fields"),
    [
        (True, "error=ServerDisconnectedError reused=true"),
        (False, "error=ServerDisconnectedError reused=false"),
    ],
)
def test_a_failures_cause_is_its_class_and_whether_its_connection_was_reused(
    reused: bool, fields: str
):
    failed = RequestFailed(
        aiohttp.ServerDisconnectedError("http://user:secret@models.internal/v1"),
        reused=reused,
        retried=False,
    )
    assert failed.cause == fields
    assert "secret" not in str(failed)  # the error's text (a URL) is never its message
