"""What a client of the guard is told when the upstream fails it: the messages every API's
error shape carries. Pure.

`fault_message` names what ended a stream early: a bound the upstream broke (a line or an
event longer than the guard reads, more texts than a reply may have), or a cut.
"""

from __future__ import annotations

from guard.wire.reply import TooManyTexts
from servekit.sse import LineTooLong

CUT_OFF = "The model's reply was cut off."
UNREACHABLE = "The model server could not be reached."
BOUNDS_BROKEN = (LineTooLong, TooManyTexts)
"""A stream the guard stops reading because the upstream went past a bound of its own."""


def fault_message(exc: BaseException) -> str:
    """What the client is told of a stream ended by `exc`: which bound the upstream broke,
    or that it cut the reply."""
    if isinstance(exc, BOUNDS_BROKEN):
        return f"The model server sent more than the proxy reads: {exc}."
    return CUT_OFF
