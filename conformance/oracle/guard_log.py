"""G10 for an app behind the guard proxy: the guard's log lines, tied to a turn by request id.

An app with no per-turn log of its own can still be judged on G10 when its model calls go
through `python -m guard` (`--guard-log FILE`). The guard writes one line per guarded
request, `guard: ROUTE status=N ... retries=R ... scaffold_stripped=N profiles=X
request_id=ID`, and sends the request upstream with that `X-Request-Id`, its recovery with
the same one; the mock keeps the id with each journal entry. So the turn's KEY gives its
requests in the journal, their ids give the guard's lines, and the turn's stripped count is
the sum over those lines (a turn may make several guarded requests: a transport retry, tool
rounds).

Deliberate choices:
- `tally` is pure (lines and ids in, a tally out); `wait_for_tally` only reads the file
  again (conformance/oracle/logs.py) until the tally is complete or the time is up, since
  the guard writes a streamed request's line when its stream has ended, which can be just
  after the page shows it.
- A line accounts for 1 + `retries` upstream requests (its own and its recovery). The
  lines are complete when every id has one and they account for every request of the turn.
  More lines with the turn's ids than the turn has requests can only come from a client that
  reuses its `X-Request-Id` across requests: those lines cannot be tied to the turn, and the
  clause says so rather than summing other turns' counts.
- Only lines written after the turn's question count (the offset the play noted).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.oracle.logs import lines_after, wait_for

GUARD_LINE = re.compile(
    r"^guard: (?P<route>\S+) status=.*? retries=(?P<retries>\d+)\b.*?"
    r" scaffold_stripped=(?P<stripped>\d+)\b.*? request_id=(?P<request_id>\S+)"
)
"""A guarded request's line in the guard's log (guard/http/upstream.py, `GuardedCall.log`);
fields the guard may add after `request_id` are ignored."""


@dataclass(frozen=True)
class GuardLine:
    route: str
    retries: int
    stripped: int
    request_id: str


def guard_lines(text: str) -> list[GuardLine]:
    """The guarded requests' lines in a stretch of the guard's log (other lines ignored)."""
    found = (GUARD_LINE.match(line) for line in text.splitlines())
    return [
        GuardLine(m["route"], int(m["retries"]), int(m["stripped"]), m["request_id"])
        for m in found
        if m
    ]


@dataclass(frozen=True)
class Tally:
    """The guard's lines for one turn, against the turn's upstream requests."""

    requests: int
    """The turn's own upstream requests, as the mock's journal has them."""
    stripped: int
    """scaffold_stripped summed over the lines."""
    lines: int
    accounted: int
    """The upstream requests the lines made: 1 + retries each."""
    missing: tuple[str, ...]
    """The turn's request ids no line names yet."""

    @property
    def complete(self) -> bool:
        return not self.missing and self.accounted >= self.requests

    @property
    def ids_reused(self) -> bool:
        """More lines than requests: the client reuses one X-Request-Id across requests."""
        return self.lines > self.requests


def tally(lines: Sequence[GuardLine], request_ids: Sequence[str]) -> Tally:
    """The lines of the turn whose upstream requests carried `request_ids` (one per request,
    a recovery repeating its request's id)."""
    wanted = Counter(request_ids)
    mine = [line for line in lines if line.request_id in wanted]
    named = {line.request_id for line in mine}
    return Tally(
        requests=len(request_ids),
        stripped=sum(line.stripped for line in mine),
        lines=len(mine),
        accounted=sum(1 + line.retries for line in mine),
        missing=tuple(sorted(i for i in wanted if i not in named)),
    )


def wait_for_tally(log: Path, offset: int, request_ids: Sequence[str], within_s: float) -> Tally:
    """The turn's tally from the lines written after `offset`, once complete, or as it stands
    when `within_s` has passed."""
    return wait_for(
        lambda: tally(guard_lines(lines_after(log, offset)), request_ids),
        lambda found: found.complete,
        within_s,
    )


def unmarked_problem(unmarked: int, requests: int) -> str:
    """Why a turn with requests that carried no request id cannot be counted from the log."""
    return (
        f"{unmarked} of the turn's {requests} upstream requests reached the mock without an"
        " X-Request-Id, so they did not come through the guard proxy and no line of its log"
        " counts them: point every model call of the app at the guard"
    )


def tally_problem(found: Tally, log: Path, within_s: float) -> str | None:
    """What keeps `found` from being the turn's count (None: it is)."""
    if found.missing:
        ids = ", ".join(found.missing)
        return (
            f"the guard's log {log} has no line for the turn's request id {ids} within"
            f" {within_s:g} s of its end: is it the log (stderr) of the guard proxy in front"
            " of this app?"
        )
    if found.accounted < found.requests:
        return (
            f"the guard's lines for the turn account for {found.accounted} of its"
            f" {found.requests} upstream requests within {within_s:g} s of its end"
        )
    if found.ids_reused:
        return (
            f"the guard's log has {found.lines} lines with the turn's request ids, but the turn"
            f" made {found.requests} upstream requests: the app reuses its X-Request-Id across"
            " requests, so the guard's lines cannot be tied to the turn"
        )
    return None
