"""The LLM client: one streaming chat request over the official openai SDK, and one retry layer.

`chat_stream` makes one streaming request and turns its chunks into the shared value types:
`StreamPiece`s for thinking and answer text as they arrive, then exactly one `RoundEnd` with
the tool calls materialized. `chat_stream_retried` wraps it in the only retry loop there is.

Deliberate choices:

- The SDK's own retries are off (`max_retries=0`): retrying is decided here, where we know
  whether anything reached the user. A request is retried only before its first piece has
  been yielded; once text is out, a retry would duplicate it, so the error propagates.
- Every failure becomes an `LLMError` whose `message` is plain copy that is safe to show a
  user (no stack trace, no URL, no upstream error text); the cause stays chained for logs.
- The upstream response is closed on every exit (normal end, error, `aclose()`, task
  cancellation) in a `finally`, with the close shielded from cancellation and bounded in
  time, so a stopped turn really disconnects from the model server. The response is closed
  before `RoundEnd` is yielded, so the connection is free while the caller runs tools.
- httpx timeouts bound each operation (a read timeout bounds one chunk, so a trickling
  server never trips it); `timeout_s` is also applied as an overall deadline, over a whole
  retried call (`chat_stream_retried`: its attempts and waits together).
  The deadline is checked around each awaited chunk, never across a `yield`, so it can
  never cancel the consumer's own work.
- Reasoning is read from `delta.reasoning_content` or `delta.reasoning` (kept by the SDK in
  `model_extra`); a server that sends both with the same text gets it once.
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
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import httpx
import httpx2
import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
)

from app.errors import LLMError, one_line
from app.rag.types import ChatMessage, RetryNotice, RoundEnd, StreamPiece, ToolCall, ToolSpec

__all__ = [
    "LLMConfig",
    "chat_stream",
    "chat_stream_retried",
    "make_client",
    "parse_retry_after",
    "retry_delay",
]

CLOSE_TIMEOUT_S = 2.0
"""How long closing the upstream response may take on the way out (it is shielded)."""

MAX_BACKOFF_EXPONENT = 30
"""Caps 2**n in the backoff so a large attempt number can never overflow."""

UNUSED_API_KEY = "unused"
"""Sent when no key is configured: local servers need none, and the SDK must not fall back
to an OPENAI_API_KEY that happens to be in the environment."""

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

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        for name in ("timeout_s", "connect_timeout_s"):
            value: float = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds")
        for name in ("retry_base_delay_s", "retry_max_delay_s", "retry_after_cap_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0")


def make_client(
    config: LLMConfig, http_client: httpx2.AsyncClient | None = None
) -> openai.AsyncOpenAI:
    """An AsyncOpenAI client with the SDK's retries off and explicit httpx timeouts.

    `http_client` replaces the SDK's own (tests pass one on an `httpx2.MockTransport`); the
    timeouts still come from `config`, per request.
    """
    return openai.AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key or UNUSED_API_KEY,
        max_retries=0,
        timeout=openai.Timeout(config.timeout_s, connect=config.connect_timeout_s),
        http_client=http_client,
    )


# --- errors ----------------------------------------------------------------------------------

MSG_UNREACHABLE = "The model service could not be reached."
MSG_TIMEOUT = "The model service took too long to answer."
MSG_CUT = "The model's reply was cut off."
MSG_ERROR_EVENT = "The model service reported an error while answering."
MSG_MALFORMED = "The model service sent a reply that could not be read."
MSG_FAILED = "The model service failed to answer."


def _status_error(exc: openai.APIStatusError) -> LLMError:
    status = exc.status_code
    retry_after = parse_retry_after(exc.response.headers)
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
        upstream=_upstream_message(exc) if 400 <= status < 500 else None,
    )


def _upstream_message(exc: openai.APIStatusError) -> str | None:
    """The service's own words from its error body (`{"error": {"message": ...}}`, or a
    top-level `message` or `detail` string), as one short line; None when it sent none."""
    body: object = exc.body
    if isinstance(body, dict):
        fields = cast(dict[str, object], body)
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
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc)
    if isinstance(
        exc,
        openai.APITimeoutError | TimeoutError | httpx.TimeoutException | httpx2.TimeoutException,
    ):
        return _timeout_error()
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError | httpx2.TransportError):
        return LLMError(MSG_UNREACHABLE, retryable=True, reason="connection failed")
    return LLMError(MSG_FAILED, reason="model error")


def _stream_error(exc: Exception) -> LLMError:
    """An error raised while reading the body of a stream that had started."""
    if isinstance(
        exc,
        openai.APITimeoutError | TimeoutError | httpx.TimeoutException | httpx2.TimeoutException,
    ):
        return _timeout_error()
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError | httpx2.TransportError):
        return LLMError(MSG_CUT, retryable=True, reason="stream cut off")
    if isinstance(exc, json.JSONDecodeError):
        return LLMError(MSG_MALFORMED, reason="malformed stream data")
    return LLMError(MSG_ERROR_EVENT, reason="error event in stream")


# The SDK wraps transport errors as APIConnectionError/APITimeoutError; the httpx ones (the
# SDK's httpx2, and httpx for a legacy client) are listed too in case one reaches us unwrapped.
_REQUEST_ERRORS = (openai.APIError, httpx.TransportError, httpx2.TransportError, TimeoutError)
_STREAM_ERRORS = (*_REQUEST_ERRORS, json.JSONDecodeError)


# --- one streaming request -------------------------------------------------------------------


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


def _reasoning_text(extra: Mapping[str, Any]) -> str:
    texts = [t for t in (extra.get("reasoning_content"), extra.get("reasoning")) if t]
    texts = [t for t in texts if isinstance(t, str)]
    if len(texts) == 2 and texts[0] == texts[1]:
        return texts[0]
    return "".join(texts)


def _within(deadline: float | None) -> asyncio.Timeout:
    """A scope that raises TimeoutError when the request's overall deadline (loop time) passes."""
    return asyncio.timeout_at(deadline)


async def _close(stream: openai.AsyncStream[ChatCompletionChunk]) -> None:
    with anyio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
        await stream.close()


async def chat_stream(
    client: openai.AsyncOpenAI,
    model: str,
    messages: list[ChatMessage],
    tools: list[ToolSpec] | None,
    *,
    timeout_s: float | None = None,
) -> AsyncGenerator[StreamPiece | RoundEnd, None]:
    """One streaming chat request: thinking and content pieces as they come, then one RoundEnd.

    `tools=None` leaves `tools` out of the request entirely. `timeout_s` is an overall
    deadline for the request (None: only the client's httpx timeouts apply). Raises LLMError.
    """
    deadline = None if timeout_s is None else asyncio.get_running_loop().time() + timeout_s
    try:
        async with _within(deadline):
            stream = await client.chat.completions.create(
                model=model,
                messages=cast("list[ChatCompletionMessageParam]", messages),
                tools=cast("list[ChatCompletionToolUnionParam]", tools)
                if tools is not None
                else openai.omit,
                stream=True,
            )
    except _REQUEST_ERRORS as exc:
        raise _request_error(exc) from exc

    calls: dict[int, _PartialCall] = {}
    finish_reason: str | None = None
    try:
        while True:
            try:
                async with _within(deadline):
                    chunk = await stream.__anext__()
            except StopAsyncIteration:
                break
            except _STREAM_ERRORS as exc:
                raise _stream_error(exc) from exc
            for choice in chunk.choices or ():  # vLLM may send `choices: null`
                if choice.index != 0:
                    continue
                delta = choice.delta
                thinking = _reasoning_text(delta.model_extra or {})
                if thinking:
                    yield StreamPiece("thinking", thinking)
                if delta.content:
                    yield StreamPiece("content", delta.content)
                for tc in delta.tool_calls or ():
                    partial = calls.setdefault(tc.index, _PartialCall())
                    if tc.id and not partial.id:
                        partial.id = tc.id
                    if tc.function is not None:
                        if tc.function.name and not partial.name:
                            partial.name = tc.function.name
                        if tc.function.arguments:
                            partial.arguments.append(tc.function.arguments)
                if choice.finish_reason is not None:
                    finish_reason = choice.finish_reason
    finally:
        await _close(stream)

    if finish_reason is None:
        raise LLMError(MSG_CUT, retryable=True, reason="stream ended early")
    tool_calls = tuple(
        ToolCall(id=p.id or f"call_{index}", name=p.name, arguments="".join(p.arguments))
        for index, p in sorted(calls.items())
    )
    yield RoundEnd(tool_calls=tool_calls, finish_reason=finish_reason)


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
    client: openai.AsyncOpenAI,
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
