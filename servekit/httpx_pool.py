"""Pooled httpx connections to an upstream server, with the one retry of `servekit.pool`.

The same race as `servekit.pool` (read its docstring), for a client built on httpx (the
recorder's, `mock_llm.record.recorder`). httpx keeps an idle connection 5 s by default
(`keepalive_expiry`), as long as uvicorn's keep-alive, and it does not retry: httpcore
drops a pooled connection the server had already closed (its socket reads as readable),
but a request sent on one that the server closes at that moment raises
`RemoteProtocolError: Server disconnected without sending a response.` (or a `ReadError`,
`WriteError` for a reset), for a POST as for a GET; measured against
tests/support/stale_upstream.py, which closes every reused connection on its next request.

`HttpxPool` keeps idle connections `POOL_IDLE_S` and sends a request once more on a fresh
connection when it failed so on a reused one, before its response head came (`send`
raised); a `ConnectError` or a timeout is not retried, nor is a fresh connection that
fails. Whether the connection was reused is what httpcore's `trace` request extension says:
a request on a new connection traces its `connect_tcp`, one on a pooled connection does
not. The fresh connection comes from a second client that keeps no connection
(`max_keepalive_connections=0`), made on first need and closed with the pool. A final
failure is `servekit.pool.RequestFailed`.
"""

from __future__ import annotations

from typing import Any

import httpx

from servekit.pool import POOL_IDLE_S, RequestFailed

__all__ = ["STALE_ERRORS", "HttpxPool"]

STALE_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
"""What a request sent on a connection the server is closing raises."""


class _Connection:
    """What httpcore's trace said of one request's connection."""

    def __init__(self) -> None:
        self.connected = False  # a new connection was opened for it
        self.sent = False  # its head began to go out

    @property
    def reused(self) -> bool:
        return self.sent and not self.connected

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        del info
        if event.endswith(".connect_tcp.started"):
            self.connected = True
        elif event.endswith(".send_request_headers.started"):
            self.sent = True


class HttpxPool:
    """The connections to one upstream: an httpx client whose idle connections are kept
    `idle_s`, and the fresh-connection client of the one retry (both made on first use).
    `retried` counts the requests sent again on a fresh connection; `transport` replaces
    the network for both (an in-memory one in tests)."""

    def __init__(
        self,
        *,
        timeout: httpx.Timeout,
        idle_s: float = POOL_IDLE_S,
        follow_redirects: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.idle_s = idle_s
        self.timeout = timeout
        self.follow_redirects = follow_redirects
        self.transport = transport
        self.retried = 0
        self._pooled: httpx.AsyncClient | None = None
        self._fresh: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        """The pooled client (for `build_request`)."""
        if self._pooled is None:
            self._pooled = httpx.AsyncClient(
                timeout=self.timeout,
                follow_redirects=self.follow_redirects,
                limits=httpx.Limits(keepalive_expiry=self.idle_s),
                transport=self.transport,
            )
        return self._pooled

    def _fresh_client(self) -> httpx.AsyncClient:
        if self._fresh is None:
            self._fresh = httpx.AsyncClient(
                timeout=self.timeout,
                follow_redirects=self.follow_redirects,
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
                transport=self.transport,
            )
        return self._fresh

    async def send(self, request: httpx.Request, *, stream: bool = False) -> httpx.Response:
        """The response to `request` (built by `client`; its body bytes, so it can be sent
        twice); a stale pooled connection is retried once on a fresh one, and any other
        failure, and the retry's, raises RequestFailed."""
        connection = _Connection()
        request.extensions = {**request.extensions, "trace": connection}
        try:
            return await self.client.send(request, stream=stream)
        except httpx.HTTPError as error:
            if not (connection.reused and isinstance(error, STALE_ERRORS)):
                raise RequestFailed(error, reused=connection.reused, retried=False) from error
        self.retried += 1
        retry = _Connection()
        request.extensions = {**request.extensions, "trace": retry}
        try:
            return await self._fresh_client().send(request, stream=stream)
        except httpx.HTTPError as error:
            raise RequestFailed(error, reused=retry.reused, retried=True) from error

    async def aclose(self) -> None:
        for client in (self._pooled, self._fresh):
            if client is not None:
                await client.aclose()
        self._pooled = self._fresh = None
