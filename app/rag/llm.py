"""The LLM client: one streaming chat request over aiohttp, and one retry layer.

`chat_stream` makes one streaming request and turns its chunks into the shared value types:
`StreamPiece`s for thinking and answer text as they arrive, then exactly one `RoundEnd` with
the tool calls materialized. `chat_stream_retried` wraps it in the only retry loop there is.

Deliberate choices:

- The request is plain aiohttp, and the body is read by `servekit.sse` with one
  `json.loads` per chunk, following the official openai SDK's rules (its SSE decoder, its
  `[DONE]`, its in-band `error` payload). Neither the SDK nor httpx is used here, both
  measured (docs/benchmarks.md, load): the SDK's typed model per chunk cost about 70% of
  the app's CPU under 200 concurrent turns (py-spy), and httpx's connection pool about
  5.5 ms of CPU per request at 200 concurrent requests against aiohttp's 0.3 ms.
- The text of one network read goes on as one piece per kind (`_merged`): a server that
  sends 30 tiny chunks at once costs one frame downstream, not 30, and nothing is held
  back to wait for more. Paced chunks arrive in separate reads and stay separate.
- There are no hidden retries: retrying is decided here, where we know whether anything
  reached the user. A request is retried only before its first piece has been yielded;
  once text is out, a retry would duplicate it, so the error propagates. The one
  exception is not a model failure: a request lost on a pooled connection that the
  server was closing at that moment (before any byte of an answer) is sent again at once
  on a fresh connection by `sg_http.pool.Pool` (issue 29), silently, outside
  `max_attempts` and with no RetryNotice; idle connections are kept `pool_idle_s` (1.5 s,
  under the common servers' keep-alive), so that is rare.
- Every failure becomes an `LLMError` whose `message` is plain copy that is safe to show a
  user (no stack trace, no URL, no upstream error text); the cause stays chained for logs,
  and a 4xx service's own message is kept apart as `upstream` (one line).
- The upstream response is closed on every exit (normal end, error, `aclose()`, task
  cancellation) in a `finally`, synchronously (aiohttp drops the connection at once, so no
  cancellation can interrupt it), so a stopped turn really disconnects from the model
  server. The response is closed
  before `RoundEnd` is yielded, so the connection is free while the caller runs tools.
  `UpstreamClient.in_flight` counts the responses not yet closed (0 when idle).
- Socket timeouts bound the connect and each read (a read timeout bounds one chunk, so a
  trickling server never trips it); `timeout_s` is also applied as an overall deadline, over a whole
  retried call (`chat_stream_retried`: its attempts and waits together).
  The deadline is checked around each awaited read, never across a `yield`, so it can
  never cancel the consumer's own work.
- A hostile or broken server cannot make the client hold unbounded data: an error body is
  read up to `MAX_ERROR_BODY_BYTES`, and one event-stream line up to the decoder's
  8 MiB (`servekit.sse.DEFAULT_MAX_LINE_BYTES`; longer is a malformed reply).
- Reasoning is read from `delta.reasoning_content` or `delta.reasoning`; a server that
  sends both with the same text gets it once. Fields of the wrong type are ignored, as the
  SDK's lenient models would pass them on unchecked.
- `Retry-After` (`retry-after-ms`, seconds, or an HTTP date) is honoured up to
  `retry_after_cap_s`; a longer or infinite wait means give up now, with copy that says how
  long the service asked for (not "in a moment"), and a value that is not a
  usable number (garbage, NaN, zero, negative, a date in the past) falls back to exponential
  backoff with jitter. Every wait is finite and bounded.
- Which errors are transient (`retryable`): 408, 409, 429, 5xx, connection failures,
  timeouts, and a stream cut before it finished. An in-band error event, a malformed data
  line and other 4xx are not.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp
import orjson
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from app.errors import LLMError, one_line
from app.rag.types import ChatMessage, RetryNotice, RoundEnd, StreamPiece, ToolCall, ToolSpec
from servekit.openai_chunks import choices_of, delta_of, reasoning_texts, tool_call_items
from servekit.sse import LineTooLong, SseDecoder, SseEvent
from sg_http.pool import POOL_IDLE_S, Pool, RequestFailed

__all__ = [
    "LLMConfig",
    "UpstreamClient",
    "chat_stream",
    "chat_stream_retried",
    "make_client",
    "parse_retry_after",
    "retry_delay",
]

MAX_BACKOFF_EXPONENT = 30
"""Caps 2**n in the backoff so a large attempt number can never overflow."""

MAX_ERROR_BODY_BYTES = 64 * 1024
"""How much of an error response's body is read for the service's message."""

MAX_TAIL_BYTES = 64 * 1024
"""How much is read after `[DONE]` to give the connection back to the pool."""

RETRYABLE_STATUSES = frozenset({408, 409, 429})


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

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        for name in ("timeout_s", "connect_timeout_s", "pool_idle_s"):
            value: float = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds")
        for name in ("retry_base_delay_s", "retry_max_delay_s", "retry_after_cap_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0")


class UpstreamClient:
    """The model server as the app reaches it: one connection pool (`sg_http.pool.Pool`:
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


# --- errors ----------------------------------------------------------------------------------

MSG_UNREACHABLE = "The model service could not be reached."
MSG_TIMEOUT = "The model service took too long to answer."
MSG_CUT = "The model's reply was cut off."
MSG_ERROR_EVENT = "The model service reported an error while answering."
MSG_MALFORMED = "The model service sent a reply that could not be read."
MSG_FAILED = "The model service failed to answer."


def _status_error(status: int, headers: Mapping[str, str], body: bytes) -> LLMError:
    retry_after = parse_retry_after(headers)
    if status == 429:
        message = f"The model service is busy (HTTP {status}). Please try again in a moment."
        reason = f"HTTP {status} rate limited"
    elif status >= 500:
        message = f"The model service had a problem (HTTP {status}). Please try again in a moment."
        reason = f"HTTP {status} server error"
    elif status in (408, 409):
        message = f"The model service could not take the request (HTTP {status}). Please try again."
        reason = f"HTTP {status}"
    elif status in (401, 403):
        message = f"The model service refused the credentials (HTTP {status})."
        reason = f"HTTP {status} refused"
    elif status == 404:
        message = f"The model service does not know this model or endpoint (HTTP {status})."
        reason = f"HTTP {status} not found"
    else:
        message = f"The model service rejected the request (HTTP {status})."
        reason = f"HTTP {status} rejected"
    retryable = status in RETRYABLE_STATUSES or status >= 500
    return LLMError(
        message,
        status=status,
        retryable=retryable,
        reason=reason,
        retry_after_s=retry_after,
        upstream=_upstream_message(body) if 400 <= status < 500 else None,
    )


def _upstream_message(body: bytes) -> str | None:
    """The service's own words from its error body (`{"error": {"message": ...}}`, or a
    top-level `message` or `detail` string), as one short line; None when it sent none."""
    try:
        parsed: object = json.loads(body)
    except ValueError:  # not JSON, or not UTF-8
        return None
    if isinstance(parsed, dict):
        fields = cast(dict[str, object], parsed)
        inner = fields.get("error")
        if isinstance(inner, dict):
            fields = cast(dict[str, object], inner)
        for key in ("message", "detail"):
            text = fields.get(key)
            if isinstance(text, str) and text.strip():
                return one_line(text) or None
    return None


def _timeout_error() -> LLMError:
    return LLMError(MSG_TIMEOUT, retryable=True, reason="timed out")


def _request_error(exc: Exception) -> LLMError:
    """An error raised while sending the request and reading the status (nothing streamed)."""
    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
        return _timeout_error()
    if isinstance(exc, aiohttp.ClientConnectionError | OSError):
        return LLMError(MSG_UNREACHABLE, retryable=True, reason="connection failed")
    return LLMError(MSG_FAILED, reason="model error")


def _stream_error(exc: Exception) -> LLMError:
    """An error raised while reading the body of a stream that had started."""
    if isinstance(exc, TimeoutError):
        return _timeout_error()
    if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError | OSError):
        return LLMError(MSG_CUT, retryable=True, reason="stream cut off")
    if isinstance(exc, LineTooLong):
        return LLMError(MSG_MALFORMED, reason="stream line too long")
    return LLMError(MSG_FAILED, reason="model error")


_REQUEST_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)
_STREAM_ERRORS = (*_REQUEST_ERRORS, LineTooLong)


# --- one streaming request -------------------------------------------------------------------


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


@dataclass
class _Accumulator:
    """What the chunks of one stream said so far: tool-call pieces and the finish reason."""

    calls: dict[int, _PartialCall] = field(default_factory=dict[int, _PartialCall])
    finish_reason: str | None = None

    def pieces(self, chunk: dict[str, Any]) -> list[StreamPiece]:
        """The thinking and answer text of one chunk (choice 0 only); tool-call pieces and
        the finish reason are kept. `choices` may be null (vLLM's usage chunk)."""
        out: list[StreamPiece] = []
        for fields in choices_of(chunk):
            if fields.get("index", 0) != 0:
                continue
            delta = delta_of(fields)
            if delta is not None:
                thinking = _reasoning_text(delta)
                if thinking:
                    out.append(StreamPiece("thinking", thinking))
                content = _text(delta.get("content"))
                if content:
                    out.append(StreamPiece("content", content))
                for _, tc in tool_call_items(delta):
                    self._tool_call_piece(tc)
            finish = fields.get("finish_reason")
            if isinstance(finish, str):
                self.finish_reason = finish
        return out

    def read(self, events: list[SseEvent]) -> tuple[list[StreamPiece], bool, LLMError | None]:
        """The pieces of one read's events, whether `[DONE]` came, and the error event or
        unreadable chunk that ended the read early, if one did."""
        pieces: list[StreamPiece] = []
        for event in events:
            if event.data.startswith("[DONE]"):
                return pieces, True, None
            if event.event == "error":
                return pieces, False, LLMError(MSG_ERROR_EVENT, reason="error event in stream")
            try:
                pieces.extend(self.pieces(_chunk(event.data)))
            except LLMError as error:
                return pieces, False, error
        return pieces, False, None

    def _tool_call_piece(self, tc: dict[str, Any]) -> None:
        index = tc.get("index", 0)
        partial = self.calls.setdefault(index if isinstance(index, int) else 0, _PartialCall())
        call_id = _text(tc.get("id"))
        if call_id and not partial.id:
            partial.id = call_id
        function = tc.get("function")
        if isinstance(function, dict):
            function = cast(dict[str, Any], function)
            name = _text(function.get("name"))
            if name and not partial.name:
                partial.name = name
            arguments = _text(function.get("arguments"))
            if arguments:
                partial.arguments.append(arguments)

    def round_end(self) -> RoundEnd:
        if self.finish_reason is None:
            raise LLMError(MSG_CUT, retryable=True, reason="stream ended early")
        tool_calls = tuple(
            ToolCall(id=p.id or f"call_{index}", name=p.name, arguments="".join(p.arguments))
            for index, p in sorted(self.calls.items())
        )
        return RoundEnd(tool_calls=tool_calls, finish_reason=self.finish_reason)


def _text(value: object) -> str | None:
    """`value` if it is a string, with any lone surrogate (a model can send `"\\ud800"` in its
    JSON) replaced by U+FFFD: such a string could be shown but never stored or logged."""
    if not isinstance(value, str):
        return None
    return value if value.isascii() else _LONE_SURROGATE.sub("\ufffd", value)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _reasoning_text(delta: Mapping[str, Any]) -> str:
    if "reasoning_content" not in delta and "reasoning" not in delta:
        return ""  # an answer's delta: the common case
    texts = [_text(t) or "" for t in reasoning_texts(delta).values()]
    if len(texts) == 2 and texts[0] == texts[1]:
        return texts[0]
    return "".join(texts)


def _chunk(data: str) -> dict[str, Any]:
    """One `data:` payload as a chunk; an `error` payload or a line that is not a JSON
    object raises the LLMError the SDK's equivalent would have become.

    orjson reads it (a fifth of the standard parser's time, and a chunk is parsed per
    token); what orjson refuses goes to the standard parser, which reads what the SDK reads
    (a lone surrogate escape, NaN) and refuses the rest, nesting past its depth included
    (a RecursionError there, not a ValueError). orjson reads an integer past 64 bits as a
    float: no field read here holds one."""
    try:
        chunk: object = orjson.loads(data)
    except orjson.JSONDecodeError:
        chunk = _standard_loads(data)
    if not isinstance(chunk, dict):
        raise LLMError(MSG_MALFORMED, reason="malformed stream data")
    chunk = cast(dict[str, Any], chunk)
    if chunk.get("error"):
        raise LLMError(MSG_ERROR_EVENT, reason="error event in stream")
    return chunk


def _standard_loads(data: str) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise LLMError(MSG_MALFORMED, reason="malformed stream data") from exc


def _merged(pieces: list[StreamPiece]) -> list[StreamPiece]:
    """`pieces` with each run of the same kind joined into one: text that arrived in one
    network read goes on as one piece, so a burst of small chunks costs one frame, not one
    per chunk. Nothing waits for anything: only what is already here is joined."""
    if len(pieces) < 2:
        return pieces
    merged: list[StreamPiece] = []
    run: list[str] = []
    kind = pieces[0].kind
    for piece in pieces:
        if piece.kind != kind:
            merged.append(StreamPiece(kind, "".join(run)))
            run, kind = [], piece.kind
        run.append(piece.text)
    merged.append(StreamPiece(kind, "".join(run)))
    return merged


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
    except _REQUEST_ERRORS:
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
        raise _request_error(failed.error) from failed  # its cause names class and reuse
    except TimeoutError as exc:  # the overall deadline
        raise _request_error(exc) from exc
    client.in_flight += 1
    finished = False
    try:
        if response.status >= 300:
            async with _within(deadline):
                error_body = await _error_body(response)
            raise _status_error(response.status, response.headers, error_body)
        decoder = SseDecoder()
        seen = _Accumulator()
        done = False
        while not done:
            try:
                piece = await _read(response, deadline)
                events = decoder.finish() if piece is None else decoder.feed(piece)
            except _STREAM_ERRORS as exc:
                raise _stream_error(exc) from exc
            finished = piece is None
            batch, done, failure = seen.read(events)
            for out in _merged(batch):
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


# --- the retry layer -------------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait, from `retry-after-ms` or `retry-after`.

    `retry-after` may be seconds (a float is accepted) or an HTTP date. Returns None when
    there is no usable value (absent, garbage, NaN). Infinity is returned as it is (it means
    "do not come back soon"); zero and negative values are returned too, and the caller
    treats them as "no advice".
    """
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) / divisor
        except ValueError:
            continue
        return None if math.isnan(seconds) else seconds
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; a date without a zone is read as such
        return None
    return when.timestamp() - (time.time() if now is None else now)


def retry_delay(
    error: LLMError,
    attempt: int,
    config: LLMConfig,
    rand: Callable[[], float] = random.random,
) -> float | None:
    """Seconds to wait before retrying after `attempt` failed, or None to give up now."""
    if not error.retryable or attempt >= config.max_attempts:
        return None
    advised = error.retry_after_s
    if advised is not None:
        if advised > config.retry_after_cap_s:  # infinity included
            return None
        if advised > 0:
            return advised
    exponent = min(attempt - 1, MAX_BACKOFF_EXPONENT)
    backoff = min(config.retry_base_delay_s * 2.0**exponent, config.retry_max_delay_s)
    jitter = 1.0 - 0.25 * min(max(rand(), 0.0), 1.0)
    return backoff * jitter


async def chat_stream_retried(
    client: UpstreamClient,
    config: LLMConfig,
    messages: list[ChatMessage],
    tools: list[ToolSpec] | None,
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
    clock: Callable[[], float] | None = None,
) -> AsyncGenerator[StreamPiece | RetryNotice | RoundEnd, None]:
    """`chat_stream`, retried on transient failures that happen before the first piece.

    Yields a RetryNotice before each retry. Once any piece has been yielded, nothing is
    retried: the LLMError propagates. When it gives up, the last LLMError is raised (its
    message saying how long the service asked to wait, when that is why). `config.timeout_s`
    is the budget of the whole call, attempts and waits together (a 3 s budget made a
    10.3 s turn when it applied per attempt): each attempt gets what is left, and a wait
    that would end past the budget is not taken. `clock` (loop time by default) measures it.
    """
    now = clock or asyncio.get_running_loop().time
    deadline = now() + config.timeout_s
    attempt = 1
    while True:
        started = False
        try:
            remaining = deadline - now()
            if remaining <= 0:
                raise _timeout_error()
            pieces = chat_stream(client, config.model, messages, tools, timeout_s=remaining)
            async with aclosing(pieces):
                async for item in pieces:
                    started = True
                    yield item
            return
        except LLMError as error:
            delay = None if started else retry_delay(error, attempt, config, rand)
            if delay is None:
                explained = _why_not_retried(error, config)
                if explained is error:
                    raise
                raise explained from error
            if now() + delay >= deadline:
                raise
            attempt += 1
            yield RetryNotice(attempt=attempt, delay_s=delay, reason=error.reason)
            await sleep(delay)


def _why_not_retried(error: LLMError, config: LLMConfig) -> LLMError:
    """`error`, or for a Retry-After past the cap, an error whose copy says so: "try again
    in a moment" would be wrong when the service asked for an hour."""
    advised = error.retry_after_s
    if advised is None or advised <= config.retry_after_cap_s or error.status is None:
        return error
    return LLMError(
        f"The model service is busy (HTTP {error.status}) and asked to wait"
        f" {_duration(advised)}. Please try again later.",
        status=error.status,
        retryable=False,
        reason=f"{error.reason}, Retry-After {_duration(advised)}",
        retry_after_s=advised,
        upstream=error.upstream,
    )


def _duration(seconds: float) -> str:
    if math.isinf(seconds):
        return "indefinitely"
    if seconds < 120:
        return f"{round(seconds)} s"
    if seconds < 2 * 3600:
        return f"about {round(seconds / 60)} min"
    return f"about {round(seconds / 3600)} h"
