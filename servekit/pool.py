"""Pooled aiohttp connections to an upstream server, and the one retry a closing server calls for.

A server closes a kept-alive connection once idle for its keep-alive (uvicorn 5 s, gunicorn
2 s); a request sent into it at that moment is lost before any answer. `Pool` keeps idle
connections only `POOL_IDLE_S` (1.5 s, under the common keep-alives), and `Pool.request`
sends once more, on a fresh connection, a request that failed on a reused connection before
any byte of its answer with an error a closing server causes (never a failed connect).

Deliberate choices:
- The retry is for any method, POST included: the request never had an answer and the
  server had not started on it (RFC 9110 §9.2.2).
- The fresh connection comes from a second session that never reuses connections
  (`force_close`): the pool's next connection could be closing too.
- Reuse is read from aiohttp's tracing, its public way to tell.
- A final failure is `RequestFailed`; a log line says its `cause` (exception class, reused
  or not), never the exception's text, which can hold a URL.
- A fresh connection that fails is not retried: that is the server's own answer.
- The body is `bytes` (or None), so it can be sent twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import aiohttp
from yarl import URL

from servekit.keep_alive import POOL_IDLE_S

__all__ = ["POOL_IDLE_S", "REQUEST_ERRORS", "Pool", "RequestFailed", "stale"]


REQUEST_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)
"""What sending a request and reading its response head can raise (aiohttp's timeouts are
TimeoutErrors)."""


class RequestFailed(Exception):
    """A request that got no response: the final error (also its `__cause__`), whether its
    connection was a reused one, and whether it was the retry on a fresh connection."""

    def __init__(self, error: Exception, *, reused: bool, retried: bool) -> None:
        super().__init__(type(error).__name__)
        self.error = error
        self.reused = reused
        self.retried = retried

    @property
    def cause(self) -> str:
        """The log line's fields, e.g. `error=ServerDisconnectedError reused=true`."""
        return f"error={type(self.error).__name__} reused={str(self.reused).lower()}"


def stale(error: Exception) -> bool:
    """Whether `error`, raised on a reused connection before the response came, is what a
    server closing that connection causes (see the module docstring)."""
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return isinstance(error.message, str)  # not a partial response head
    if isinstance(error, aiohttp.ClientConnectorError):
        return False
    # a reset, a broken pipe; a write to a closing transport is aiohttp's
    # ClientConnectionResetError, a ConnectionResetError (one before aiohttp 3.10.6)
    return isinstance(error, aiohttp.ClientOSError | ConnectionResetError)


@dataclass
class _Connection:
    """What tracing saw of one request's connection."""

    reused: bool = False


_TraceCallback = Callable[[aiohttp.ClientSession, SimpleNamespace, object], Awaitable[None]]


def _marks_reused(reused: bool) -> _TraceCallback:
    """A trace callback that marks the request's connection reused (or fresh)."""

    async def mark(
        session: aiohttp.ClientSession, context: SimpleNamespace, params: object
    ) -> None:
        del session, params
        if isinstance(context.trace_request_ctx, _Connection):
            context.trace_request_ctx.reused = reused

    return mark


class Pool:
    """The connections to one upstream: an aiohttp session whose idle connections are kept
    `idle_s`, and the fresh-connection session of the one retry (both made on first use,
    inside the running event loop, as aiohttp requires). No cap on connections (one per
    request in flight). `retried` counts the requests sent again on a fresh connection."""

    def __init__(
        self,
        *,
        timeout: aiohttp.ClientTimeout,
        idle_s: float = POOL_IDLE_S,
        auto_decompress: bool = True,
    ) -> None:
        self.idle_s = idle_s
        self.timeout = timeout
        self.auto_decompress = auto_decompress
        self.retried = 0
        self._pooled: aiohttp.ClientSession | None = None
        self._fresh: aiohttp.ClientSession | None = None
        self._trace = aiohttp.TraceConfig()
        self._trace.on_connection_reuseconn.append(_marks_reused(True))
        self._trace.on_connection_create_end.append(_marks_reused(False))

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pooled session."""
        if self._pooled is None:
            self._pooled = self._session(
                aiohttp.TCPConnector(limit=0, keepalive_timeout=self.idle_s)
            )
        return self._pooled

    def _fresh_session(self) -> aiohttp.ClientSession:
        if self._fresh is None:
            self._fresh = self._session(aiohttp.TCPConnector(limit=0, force_close=True))
        return self._fresh

    def _session(self, connector: aiohttp.TCPConnector) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            timeout=self.timeout,
            auto_decompress=self.auto_decompress,
            trace_configs=[self._trace],
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        proxy: URL | None = None,
        proxy_auth: aiohttp.BasicAuth | None = None,
    ) -> aiohttp.ClientResponse:
        """The response (its head read; the caller reads the body and releases it). A stale
        pooled connection is retried once on a fresh one; any other failure, and the
        retry's, raises RequestFailed."""

        async def send(session: aiohttp.ClientSession, ctx: _Connection) -> aiohttp.ClientResponse:
            return await session.request(
                method, url, data=data, headers=headers, proxy=proxy, proxy_auth=proxy_auth,
                trace_request_ctx=ctx,
            )  # fmt: skip

        connection = _Connection()
        try:
            return await send(self.session, connection)
        except REQUEST_ERRORS as error:
            if not (connection.reused and stale(error)):
                raise RequestFailed(error, reused=connection.reused, retried=False) from error
        self.retried += 1
        retry = _Connection()
        try:
            return await send(self._fresh_session(), retry)
        except REQUEST_ERRORS as error:
            raise RequestFailed(error, reused=retry.reused, retried=True) from error

    def idle(self) -> bool:
        """No connection lent out, by the pool or the retry's session."""
        for session in (self._pooled, self._fresh):
            connector = None if session is None else session.connector
            if connector is not None and connector._acquired:  # pyright: ignore[reportPrivateUsage]
                return False
        return True

    async def close(self) -> None:
        for session in (self._pooled, self._fresh):
            if session is not None:
                await session.close()
