"""The httpx-like libraries the transports serve: httpx, and httpx2 (its fork, which the
anthropic and openai SDKs type their clients with) where it is installed. A request is
answered in its own library's types (`Http`), and the transports subclass both libraries'
bases (`AsyncBase`, `SyncBase`), so a client of either takes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import httpx

if TYPE_CHECKING:
    import httpx2

    # Each request is answered in its own library's types, which the checker cannot see.
    class AsyncBase(httpx.AsyncBaseTransport, httpx2.AsyncBaseTransport): ...  # pyright: ignore[reportIncompatibleMethodOverride]

    class SyncBase(httpx.BaseTransport, httpx2.BaseTransport): ...  # pyright: ignore[reportIncompatibleMethodOverride]

else:
    try:
        import httpx2
    except ImportError:
        AsyncBase, SyncBase = httpx.AsyncBaseTransport, httpx.BaseTransport
    else:

        class AsyncBase(httpx.AsyncBaseTransport, httpx2.AsyncBaseTransport):
            pass

        class SyncBase(httpx.BaseTransport, httpx2.BaseTransport):
            pass


@dataclass(frozen=True, eq=False)
class Http:
    """One httpx-like library's classes."""

    request: type[httpx.Request]
    response: type[httpx.Response]
    headers: type[httpx.Headers]
    errors: tuple[type[Exception], ...]
    async_stream: type[httpx.AsyncByteStream]  # the base of a stream its Response takes
    sync_stream: type[httpx.SyncByteStream]
    async_transport: Callable[[], httpx.AsyncBaseTransport]  # its default transport
    sync_transport: Callable[[], httpx.BaseTransport]


HTTPX = Http(
    httpx.Request,
    httpx.Response,
    httpx.Headers,
    (httpx.TransportError, httpx.StreamError),
    httpx.AsyncByteStream,
    httpx.SyncByteStream,
    httpx.AsyncHTTPTransport,
    httpx.HTTPTransport,
)


@functools.cache
def httpx2_classes() -> Http | None:
    """httpx2's classes, when it is installed."""
    try:
        import httpx2
    except ImportError:
        return None
    return Http(
        cast(type[httpx.Request], httpx2.Request),
        cast(type[httpx.Response], httpx2.Response),
        cast(type[httpx.Headers], httpx2.Headers),
        (httpx2.TransportError, httpx2.StreamError),
        cast(type[httpx.AsyncByteStream], httpx2.AsyncByteStream),
        cast(type[httpx.SyncByteStream], httpx2.SyncByteStream),
        cast(Callable[[], httpx.AsyncBaseTransport], httpx2.AsyncHTTPTransport),
        cast(Callable[[], httpx.BaseTransport], httpx2.HTTPTransport),
    )


def http_for(request: object) -> Http:
    """The library `request` is of."""
    if isinstance(request, httpx.Request):
        return HTTPX
    other = httpx2_classes()
    if other is not None and isinstance(request, other.request):
        return other
    raise TypeError(f"not an httpx or httpx2 request: {type(request).__name__}")


def bases(stream: type, base: type) -> tuple[type, ...]:
    """A guarded stream's bases for a library whose stream base is `base`."""
    return (stream,) if issubclass(stream, base) else (stream, base)
