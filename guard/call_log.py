"""One guarded request's log line and request id, as the proxy and the transports write
them. Pure.

`call_line` is `guard: ROUTE status=N stream=B retries=N total_ms=N scaffold_stripped=N
profiles=X request_id=ID`, with an upstream failure's cause after the status. Fields are
only ever added at the end, so that parsers of the ones before keep working. A guarded
request goes upstream with an `X-Request-Id` (`request_id`: the client's when it is a plain
token, else a fresh one), which its line ends with: what ties the line to the model
server's own records.
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from guard.relay import Tally
from guardrail.policy import strip_warning

REQUEST_ID = "X-Request-Id"
PLAIN_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""A client's request id the guard keeps: a plain token, safe in a log line."""


def request_id(given: str | None) -> str:
    """The id a guarded request goes upstream with: `given` (the client's) when it is a
    plain token, else a fresh one of the guard's own."""
    if given is not None and PLAIN_REQUEST_ID.fullmatch(given):
        return given
    return f"guard-{uuid.uuid4().hex}"


def call_line(
    route: str,
    *,
    status: int,
    cause: str,
    stream: bool,
    retries: int,
    total_ms: int,
    stripped: int,
    profiles: str,
    request_id: str,
) -> str:
    """The request's log line (see the module docstring)."""
    return (
        f"guard: {route} status={status}{f' {cause}' if cause else ''}"
        f" stream={str(stream).lower()} retries={retries} total_ms={total_ms}"
        f" scaffold_stripped={stripped} profiles={profiles} request_id={request_id}"
    )


def log_call(
    logger: logging.Logger,
    route: str,
    tally: Tally,
    *,
    status: int,
    cause: str,
    stream: bool,
    started: float,
    profiles: str,
    request_id: str,
) -> None:
    """A guarded request's lines on `logger`: a warning for each reply that had markup (its
    round, count and first span), then its `call_line` (INFO); `started` is when the request
    came (`time.perf_counter()`)."""
    for round_number, stripped, span in tally.spans:
        logger.warning(strip_warning(stripped, round_number, span))
    logger.info(
        call_line(
            route,
            status=status,
            cause=cause,
            stream=stream,
            retries=tally.recoveries,
            total_ms=round((time.perf_counter() - started) * 1000),
            stripped=tally.stripped,
            profiles=profiles,
            request_id=request_id,
        )
    )
