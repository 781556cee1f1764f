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
from typing import Protocol

from guard.relay import Tally
from guard.wire.api import Api
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


class LoggedCall(Protocol):
    """What a guarded call keeps for its log line, as the proxy's (guard.http.upstream.
    GuardedCall) and the transports' (guard.transport.call.TransportCall) keep it."""

    api: Api
    tally: Tally
    status: int
    cause: str  # the log fields of an upstream request that failed, if one did
    started: float  # when the request came (`time.perf_counter()`)
    logged: bool

    @property
    def request_id(self) -> str: ...

    def profiles_said(self) -> str:
        """`profiles=`'s value: the setting, or under auto the families the model matched."""
        ...


def log_once(call: LoggedCall, logger: logging.Logger, *, stream: bool) -> None:
    """A guarded request's lines on `logger`, once (a second call writes nothing): a warning
    for each reply that had markup (its round, count and first span), then its `call_line`
    (INFO)."""
    if call.logged:
        return
    call.logged = True
    tally = call.tally
    for round_number, stripped, span in tally.spans:
        logger.warning(strip_warning(stripped, round_number, span))
    logger.info(
        call_line(
            call.api.name,
            status=call.status,
            cause=call.cause,
            stream=stream,
            retries=tally.recoveries,
            total_ms=round((time.perf_counter() - call.started) * 1000),
            stripped=tally.stripped,
            profiles=call.profiles_said(),
            request_id=call.request_id,
        )
    )
