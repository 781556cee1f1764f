"""The retry layer: `chat_stream_retried`, the only retry loop there is, over
`chat_stream`.

Retrying is decided here, where we know whether anything reached the user: a request is
retried only before its first piece has been yielded; once text is out, a retry would
duplicate it, so the error propagates. `Retry-After` is honoured up to
`retry_after_cap_s`; a longer or infinite wait means give up now, with copy that says how
long the service asked for (not "in a moment"), and no usable advice (zero, negative, a
date in the past) falls back to exponential backoff with jitter. `timeout_s` is the budget
of the whole call, attempts and waits together; every wait is finite and bounded.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing

from scaffold_guard.app.errors import LLMError
from scaffold_guard.app.rag.llm.errors import timeout_error
from scaffold_guard.app.rag.llm.transport import LLMConfig, UpstreamClient, chat_stream
from scaffold_guard.app.rag.types import ChatMessage, RetryNotice, RoundEnd, StreamPiece, ToolSpec

MAX_BACKOFF_EXPONENT = 30
"""Caps 2**n in the backoff so a large attempt number can never overflow."""


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
                raise timeout_error()
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
