"""The model server as the app reaches it: one streaming chat request over aiohttp.

`chat_stream` makes one streaming request, reads it with `servekit.sse.SseDecoder` (a line
over 8 MiB is a malformed reply), and turns its chunks into `StreamPiece`s and one
`RoundEnd` (`scaffold_guard.app.rag.llm.chunks`).

A hostile model server is met with bounds, each an LLMError the turn shows as its error
frame (docs/reliability.md, "A hostile model server"): a body (decoded: aiohttp inflates
gzip and deflate in bounded steps) past `max_reply_bytes` (`MAX_REPLY_BYTES`), so a gzip
bomb or a stream of comments ends, not only its text; a reply's text past
`max_reply_chars` (`scaffold_guard.app.rag.llm.chunks.MAX_REPLY_CHARS`); a line past 8 MiB. Invalid
UTF-8 reads as U+FFFD, as the SDK reads it; a character split across reads is joined first.

Deliberate choices:
- Plain aiohttp, neither the openai SDK nor httpx: under load their per-chunk models and
  pool cost most of the app's CPU (docs/benchmarks.md).
- A request lost on a pooled connection the server was closing is resent at once on a
  fresh connection by `servekit.pool.Pool`, outside the retry layer.
- The response is closed on every exit, synchronously, so a stopped turn disconnects from
  the model server, and before `RoundEnd` so the connection is free while tools run.
- `timeout_s` is checked around each awaited read, never across a `yield`, so it cannot
  cancel the consumer's own work.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from scaffold_guard.app.rag.llm.chunks import MAX_REPLY_CHARS, ChunkAccumulator, merged
from scaffold_guard.app.rag.llm.errors import (
    REQUEST_ERRORS,
    STREAM_ERRORS,
    reply_too_long,
    request_error,
    status_error,
    stream_error,
)
from scaffold_guard.app.rag.types import ChatMessage, RoundEnd, StreamPiece, ToolSpec
from servekit.pool import POOL_IDLE_S, Pool, RequestFailed
from servekit.sse import SseDecoder

MAX_ERROR_BODY_BYTES = 64 * 1024
"""How much of an error response's body is read for the service's message."""

MAX_TAIL_BYTES = 64 * 1024
"""How much is read after `[DONE]` to give the connection back to the pool."""

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""The most of one reply's body (as decoded) read; past it the reply is an LLMError."""


@dataclass(frozen=True)
class LLMConfig:
    """Where the model is and how patient to be with it."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)  # never in logs
    timeout_s: float = 120.0  # overall, per model request: its attempts and waits together
    connect_timeout_s: float = 5.0
    max_attempts: int = 3
    retry_base_delay_s: float = 0.5
    retry_max_delay_s: float = 8.0
    retry_after_cap_s: float = 10.0  # a longer Retry-After means give up, not wait
    pool_idle_s: float = POOL_IDLE_S  # how long an idle connection is kept for reuse
    max_reply_bytes: int = MAX_REPLY_BYTES  # of one reply's (decoded) body
    max_reply_chars: int = MAX_REPLY_CHARS  # of one reply's text, every kind together

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.max_reply_bytes < 1 or self.max_reply_chars < 1:
            raise ValueError("max_reply_bytes and max_reply_chars must be at least 1")
        for name in ("timeout_s", "connect_timeout_s", "pool_idle_s"):
            value: float = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds")
        for name in ("retry_base_delay_s", "retry_max_delay_s", "retry_after_cap_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0")


class UpstreamClient:
    """The model server as the app reaches it: one connection pool (`servekit.pool.Pool`:
    idle connections kept `pool_idle_s`, a stale one retried once on a fresh connection)
    bound to the base URL, with explicit timeouts, and a count of the responses still open
    (`in_flight`, 0 when nothing is streaming).

    The pool's sessions are made on first use, inside the running event loop, as aiohttp
    requires.
    Proxy variables (HTTP_PROXY, NO_PROXY, ...) are honoured, as the openai SDK does, but
    read once here: aiohttp's `trust_env` would look them and ~/.netrc up again in a worker
    thread for every request (two thread hops per request, measured under load).
    """

    def __init__(self, config: LLMConfig) -> None:
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if config.api_key:
            self.headers["Authorization"] = f"Bearer {config.api_key}"
        self.timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=config.connect_timeout_s, sock_read=config.timeout_s
        )
        self.in_flight = 0
        self.max_reply_bytes = config.max_reply_bytes
        self.max_reply_chars = config.max_reply_chars
        self.proxy, self.proxy_auth = _env_proxy(self.url)
        self.pool = Pool(timeout=self.timeout, idle_s=config.pool_idle_s)  # no cap on connections

    def idle(self) -> bool:
        """No response open, and no pooled connection lent out."""
        return not self.in_flight and self.pool.idle()

    async def close(self) -> None:
        await self.pool.close()

    async def __aenter__(self) -> UpstreamClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _env_proxy(url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy the environment names for `url` (None when there is none or NO_PROXY
    excludes its host)."""
    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None


def make_client(config: LLMConfig) -> UpstreamClient:
    """The client for `config`'s model server."""
    return UpstreamClient(config)


def _within(deadline: float | None) -> asyncio.Timeout:
    """A scope that raises TimeoutError when the request's overall deadline (loop time) passes."""
    return asyncio.timeout_at(deadline)


def _close(response: aiohttp.ClientResponse, finished: bool) -> None:
    """Give the connection back to the pool when the body was read to its end; otherwise
    close it, which is how the model server learns that the reader went away. Synchronous,
    so no cancellation can interrupt it."""
    if finished:
        response.release()
    else:
        response.close()


async def _error_body(response: aiohttp.ClientResponse) -> bytes:
    """At most MAX_ERROR_BODY_BYTES of an error response's body (b"" if it breaks)."""
    try:
        return await response.content.read(MAX_ERROR_BODY_BYTES)
    except (aiohttp.ClientError, OSError):
        return b""


async def _drain(response: aiohttp.ClientResponse, deadline: float | None) -> bool:
    """Read what follows `[DONE]` (usually only the body's last empty chunk), so the
    connection can go back to the pool; a server that keeps sending gets MAX_TAIL_BYTES
    more. True when the body ended."""
    left = MAX_TAIL_BYTES
    try:
        while left > 0:
            piece = await _read(response, deadline)
            if piece is None:
                return True
            left -= len(piece)
    except REQUEST_ERRORS:
        pass  # the answer is complete; a broken tail only costs the connection
    return False


async def _read(response: aiohttp.ClientResponse, deadline: float | None) -> bytes | None:
    """The next piece of the body, or None at its end, within the overall deadline."""
    async with _within(deadline):
        piece = await response.content.readany()
    return piece or None


async def chat_stream(
    client: UpstreamClient,
    model: str,
    messages: list[ChatMessage],
    tools: list[ToolSpec] | None,
    *,
    timeout_s: float | None = None,
) -> AsyncGenerator[StreamPiece | RoundEnd, None]:
    """One streaming chat request: thinking and content pieces as they come, then one RoundEnd.

    `tools=None` leaves `tools` out of the request entirely. `timeout_s` is an overall
    deadline for the request (None: only the client's socket timeouts apply). Raises LLMError.
    """
    deadline = None if timeout_s is None else asyncio.get_running_loop().time() + timeout_s
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if tools is not None:
        body["tools"] = tools
    payload = json.dumps(body).encode()  # ASCII: a lone surrogate goes as its \\u escape
    try:
        async with _within(deadline):
            response = await client.pool.request(
                "POST",
                client.url,
                data=payload,
                headers=client.headers,
                proxy=client.proxy,
                proxy_auth=client.proxy_auth,
            )
    except RequestFailed as failed:  # a stale pooled connection was retried already
        raise request_error(failed.error) from failed  # its cause names class and reuse
    except TimeoutError as exc:  # the overall deadline
        raise request_error(exc) from exc
    client.in_flight += 1
    finished = False
    try:
        if response.status >= 300:
            async with _within(deadline):
                error_body = await _error_body(response)
            raise status_error(response.status, response.headers, error_body)
        decoder = SseDecoder()
        seen = ChunkAccumulator(max_chars=client.max_reply_chars)
        left = client.max_reply_bytes
        done = False
        while not done:
            try:
                piece = await _read(response, deadline)
                events = decoder.finish() if piece is None else decoder.feed(piece)
            except STREAM_ERRORS as exc:
                raise stream_error(exc) from exc
            finished = piece is None
            left -= 0 if piece is None else len(piece)
            if left < 0:
                raise reply_too_long(client.max_reply_bytes, "bytes")
            batch, done, failure = seen.read(events)
            for out in merged(batch):
                yield out
            if failure is not None:
                raise failure  # after what came before it in the same read
            done = done or finished
        if not finished:
            finished = await _drain(response, deadline)
    finally:
        try:
            _close(response, finished)
        finally:
            client.in_flight -= 1
    yield seen.round_end()
