"""Validate the query of a journal read (`GET /_mock/requests`). Pure: pairs in, a query out.

`key` and `flow` select entries, and `side_calls` keeps side calls (`include`, the default),
drops them (`exclude`: a turn's own requests) or keeps only them (`only`); `settle_ms` makes
the read wait until the KEY's turn has settled (see `settle.py`), for at most `timeout_ms`.
Unknown, repeated or empty parameters, numbers that are not plain non-negative integers
within their caps and filters that are not one of their values are errors (400), never
ignored: a read that silently did not wait because of a typo (`settle=500`) would
make a test count requests too early and pass or fail for the wrong reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

DEFAULT_TIMEOUT_MS = 10_000
"""How long a settle read waits at most when `timeout_ms` is not given."""
MAX_TIMEOUT_MS = 60_000
MAX_SETTLE_MS = 30_000
PARAMETERS = ("flow", "key", "settle_ms", "side_calls", "timeout_ms")
SideCallsFilter = Literal["include", "exclude", "only"]
SIDE_CALLS_FILTERS: tuple[SideCallsFilter, ...] = ("include", "exclude", "only")
_DIGITS = re.compile(r"[0-9]+")


class QueryError(ValueError):
    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(frozen=True)
class JournalQuery:
    key: str | None = None
    flow: str | None = None
    settle_ms: int | None = None
    """Wait until the KEY's entries have been quiet this long (None: answer at once)."""
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    side_calls: SideCallsFilter = "include"
    """Which entries the read returns; the settle rule always looks at every entry of the
    KEY, side calls included (a turn has settled when nothing under its KEY changes)."""


def parse_journal_query(params: Sequence[tuple[str, str]]) -> JournalQuery:
    """The query of `GET /_mock/requests`, from its (name, value) pairs in order."""
    values: dict[str, str] = {}
    for name, value in params:
        if name not in PARAMETERS:
            expected = ", ".join(PARAMETERS)
            raise QueryError(
                f"Unknown query parameter {name!r} (expected one of: {expected}).", name
            )
        if name in values:
            raise QueryError(f"Query parameter {name!r} is given more than once.", name)
        if not value:
            raise QueryError(f"Query parameter {name!r} is empty.", name)
        values[name] = value
    settle_ms = _milliseconds(values, "settle_ms", MAX_SETTLE_MS)
    timeout_ms = _milliseconds(values, "timeout_ms", MAX_TIMEOUT_MS)
    if settle_ms is not None and "key" not in values:
        raise QueryError("'settle_ms' waits for one turn: give its 'key' too.", "settle_ms")
    if timeout_ms is not None and settle_ms is None:
        raise QueryError("'timeout_ms' bounds a settle read: give 'settle_ms' too.", "timeout_ms")
    return JournalQuery(
        key=values.get("key"),
        flow=values.get("flow"),
        settle_ms=settle_ms,
        timeout_ms=DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms,
        side_calls=_side_calls(values.get("side_calls", "include")),
    )


def _side_calls(value: str) -> SideCallsFilter:
    if value not in SIDE_CALLS_FILTERS:
        expected = ", ".join(SIDE_CALLS_FILTERS)
        raise QueryError(
            f"'side_calls' must be one of {expected}, not {value[:40]!r}.", "side_calls"
        )
    return value


def _milliseconds(values: dict[str, str], name: str, cap: int) -> int | None:
    value = values.get(name)
    if value is None:
        return None
    if not _DIGITS.fullmatch(value):
        raise QueryError(
            f"{name!r} must be a whole number of milliseconds (0 to {cap}), not {value[:40]!r}.",
            name,
        )
    if len(value) > len(str(cap)) or int(value) > cap:
        raise QueryError(f"{name!r} must be at most {cap} milliseconds, not {value[:40]}.", name)
    return int(value)
