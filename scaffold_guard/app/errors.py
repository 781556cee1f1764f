"""The app's error types, in one place.

Every error the app raises on purpose derives from `AppError`, whose `message` is plain
copy that is safe to show a user: no stack trace, no URL, no upstream or model text. The
turn (scaffold_guard.app.turn) maps errors to its terminal `error` frame by type: an `AppError`
shows its own message, anything else shows a generic line and its traceback goes to the log.

Deliberate choices: the cause of an error (an httpx or SDK exception, an sqlite error)
stays chained on `__cause__` for the log, and never reaches `message`. The one piece of
upstream text a user may see is an LLMError's `upstream`: the model service's own message
when it rejected the request (HTTP 4xx: an unknown model, a bad parameter), because only
that message says what to fix; it is kept apart from `message`, cut to one short line and
stripped of control and bidi characters (`one_line`), and the page shows it as text.
"""

from __future__ import annotations

import re
import unicodedata

from guardrail.policy import MALFORMED_REPLY

__all__ = [
    "MALFORMED_REPLY",
    "UPSTREAM_MESSAGE_CHARS",
    "AppError",
    "LLMError",
    "MalformedReplyError",
    "NotesError",
    "one_line",
]


TURN_TIMED_OUT = "The answer took too long and was stopped — please try again."
"""The copy of a turn that ran past SG_TURN_TIMEOUT_S."""

SERVER_STOPPING = "The server is shutting down — please ask again in a moment."
"""The copy of a turn still streaming when the server shuts down."""

UPSTREAM_MESSAGE_CHARS = 300
"""The longest upstream message an error frame carries (longer ones end with an ellipsis)."""

_SPACES = re.compile(r"\s+")


def one_line(text: str, limit: int = UPSTREAM_MESSAGE_CHARS) -> str:
    """`text` as one short line: control, format (bidi, zero-width) and other invisible
    characters dropped, runs of white space made one space, cut to `limit` characters."""
    visible = "".join(
        " " if char.isspace() else char
        for char in text
        if char.isspace() or unicodedata.category(char)[0] != "C"
    )
    flat = _SPACES.sub(" ", visible).strip()
    return flat if len(flat) <= limit else f"{flat[: limit - 1].rstrip()}…"


class AppError(Exception):
    """A failure the app expected. `message` is plain words, safe to show a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LLMError(AppError):
    """A model request failed (transport, status, timeout, a cut or unreadable stream)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        reason: str = "model error",
        retry_after_s: float | None = None,
        upstream: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.reason = reason  # a short label for logs and RetryNotice, e.g. "HTTP 429 rate limited"
        self.retry_after_s = retry_after_s  # parsed Retry-After, None if absent or unusable
        self.upstream = upstream  # the service's own message for a 4xx, made one_line()


class NotesError(AppError):
    """Searching the notes failed (the index could not be read)."""


class MalformedReplyError(AppError):
    """The model's answer was raw scaffolding twice: first round and its one recovery (G3).

    Raised only by the guardrail's recovery policy in the agent, never from inside a model
    stream, so the transport retry rule never sees it.
    """

    def __init__(self) -> None:
        super().__init__(MALFORMED_REPLY)


class TurnTimeoutError(AppError):
    """The turn as a whole ran past its time budget (SG_TURN_TIMEOUT_S), whatever it was
    waiting on: a stalled model, a slow tool, retries and a recovery together."""

    def __init__(self) -> None:
        super().__init__(TURN_TIMED_OUT)
