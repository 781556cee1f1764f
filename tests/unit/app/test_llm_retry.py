"""scaffold_guard.app.rag.llm's retry arithmetic: the Retry-After headers read, and the delay before
the next attempt (the advice honoured up to its cap, else a jittered backoff). Pure."""

from __future__ import annotations

import email.utils
import math

import pytest

from scaffold_guard.app.errors import LLMError
from scaffold_guard.app.rag.llm import LLMConfig, parse_retry_after, retry_delay

MODEL = "lfm2-test"

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "1"}, 1.0),
        ({"retry-after": " 2.5 "}, 2.5),
        ({"retry-after": "121"}, 121.0),
        ({"retry-after": "-5"}, -5.0),
        ({"retry-after": "inf"}, math.inf),
        ({"retry-after": "1e400"}, math.inf),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "garbage"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
        ({"retry-after": email.utils.formatdate(NOW + 3, usegmt=True)}, 3.0),
        ({"retry-after": email.utils.formatdate(NOW - 30, usegmt=True)}, -30.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00"}, None),  # no zone: not an HTTP date
    ],
)
def test_parse_retry_after_reads_seconds_milliseconds_and_dates(
    headers: dict[str, str], expected: float | None
) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


CONFIG = LLMConfig(base_url="http://127.0.0.1:1/v1", model=MODEL)


@pytest.mark.parametrize(
    ("retry_after_s", "attempt", "rand", "expected"),
    [
        (None, 1, 0.0, 0.5),
        (None, 1, 1.0, 0.375),
        (None, 2, 0.0, 1.0),
        (1.0, 1, 0.0, 1.0),
        (10.0, 1, 0.0, 10.0),
        (10.5, 1, 0.0, None),
        (math.inf, 1, 0.0, None),
        (-5.0, 1, 0.0, 0.5),
        (0.0, 2, 0.0, 1.0),
        (None, 3, 0.0, None),  # attempts used up
        (None, 1, 7.0, 0.375),  # a bad random source is clamped
    ],
)
def test_retry_delay_honours_retry_after_up_to_the_cap_else_backs_off(
    retry_after_s: float | None, attempt: int, rand: float, expected: float | None
) -> None:
    error = LLMError("busy", status=429, retryable=True, retry_after_s=retry_after_s)
    assert retry_delay(error, attempt, CONFIG, lambda: rand) == expected


def test_backoff_is_capped_at_the_max_delay_even_for_huge_attempt_numbers() -> None:
    config = LLMConfig(base_url="http://x/v1", model=MODEL, max_attempts=10_000)
    error = LLMError("busy", retryable=True)
    assert retry_delay(error, 5_000, config, lambda: 0.0) == config.retry_max_delay_s


def test_retry_delay_never_retries_a_non_retryable_error() -> None:
    assert retry_delay(LLMError("no", status=400), 1, CONFIG) is None
