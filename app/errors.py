"""The app's error types, in one place.

Every error the app raises on purpose derives from `AppError`, whose `message` is plain
copy that is safe to show a user: no stack trace, no URL, no upstream or model text. The
turn (app.turn) maps errors to its terminal `error` frame by type: an `AppError` shows its
own message, anything else shows a generic line and its traceback goes to the log.

Deliberate choice: the cause of an error (an httpx or SDK exception, an sqlite error) stays
chained on `__cause__` for the log, and never reaches `message`.
"""

from __future__ import annotations

__all__ = ["MALFORMED_REPLY", "AppError", "LLMError", "MalformedReplyError", "NotesError"]

MALFORMED_REPLY = "The model returned a malformed reply — please try again."
"""The exact copy of contract clause G3."""


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
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.reason = reason  # a short label for logs and RetryNotice, e.g. "HTTP 429 rate limited"
        self.retry_after_s = retry_after_s  # parsed Retry-After, None if absent or unusable


class NotesError(AppError):
    """Searching the notes failed (the index could not be read)."""


class MalformedReplyError(AppError):
    """The model's answer was raw scaffolding twice: first round and its one recovery (G3).

    Raised only by the guardrail's recovery policy in the agent, never from inside a model
    stream, so the transport retry rule never sees it.
    """

    def __init__(self) -> None:
        super().__init__(MALFORMED_REPLY)
