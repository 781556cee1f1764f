"""What a failed model request tells the user: plain copy, never a stack trace, a URL or
upstream text, as an `LLMError`. Pure.

- `status_error`: an error status, with the wait its `Retry-After` asks for
  (`parse_retry_after`) and, for a 4xx, the service's own words kept apart as `upstream`
  (one line: only they say what to fix);
- `request_error`, `stream_error`: an exception while sending the request, or while
  reading a stream that had started;
- which errors are transient (`retryable`): 408, 409, 429, 5xx, connection failures,
  timeouts, and a stream cut before it finished. An in-band error event, a malformed data
  line, a reply past the client's bounds (`reply_too_long`) and other 4xx are not.

`Retry-After` is `retry-after-ms`, seconds, or an HTTP date; a value that is not a usable
number (garbage, NaN) reads as none.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from collections.abc import Mapping

import aiohttp

from guardrail.json_shapes import is_object
from scaffold_guard.app.errors import LLMError, one_line
from servekit.sse import LineTooLong

RETRYABLE_STATUSES = frozenset({408, 409, 429})

MSG_UNREACHABLE = "The model service could not be reached."
MSG_TIMEOUT = "The model service took too long to answer."
MSG_CUT = "The model's reply was cut off."
MSG_ERROR_EVENT = "The model service reported an error while answering."
MSG_MALFORMED = "The model service sent a reply that could not be read."
MSG_FAILED = "The model service failed to answer."
MSG_TOO_LONG = "The model's reply was longer than the app reads — please try again."


def status_error(status: int, headers: Mapping[str, str], body: bytes) -> LLMError:
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
        upstream=upstream_message(body) if 400 <= status < 500 else None,
    )


def upstream_message(body: bytes) -> str | None:
    """The service's own words from its error body (`{"error": {"message": ...}}`, or a
    top-level `message` or `detail` string), as one short line; None when it sent none."""
    try:
        parsed: object = json.loads(body)
    except ValueError:  # not JSON, or not UTF-8
        return None
    if is_object(parsed):
        inner = parsed.get("error")
        fields = inner if is_object(inner) else parsed
        for key in ("message", "detail"):
            text = fields.get(key)
            if isinstance(text, str) and text.strip():
                return one_line(text) or None
    return None


def reply_too_long(limit: int, unit: str) -> LLMError:
    """A reply past one of the client's bounds: more than `limit` `unit` (bytes, chars)."""
    return LLMError(MSG_TOO_LONG, reason=f"reply over {limit} {unit}")


def timeout_error() -> LLMError:
    return LLMError(MSG_TIMEOUT, retryable=True, reason="timed out")


def request_error(exc: Exception) -> LLMError:
    """An error raised while sending the request and reading the status (nothing streamed)."""
    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
        return timeout_error()
    if isinstance(exc, aiohttp.ClientConnectionError | OSError):
        return LLMError(MSG_UNREACHABLE, retryable=True, reason="connection failed")
    return LLMError(MSG_FAILED, reason="model error")


def stream_error(exc: Exception) -> LLMError:
    """An error raised while reading the body of a stream that had started."""
    if isinstance(exc, TimeoutError):
        return timeout_error()
    if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError | OSError):
        return LLMError(MSG_CUT, retryable=True, reason="stream cut off")
    if isinstance(exc, LineTooLong):
        return LLMError(MSG_MALFORMED, reason="stream line too long")
    return LLMError(MSG_FAILED, reason="model error")


REQUEST_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)
STREAM_ERRORS = (*REQUEST_ERRORS, LineTooLong)


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
