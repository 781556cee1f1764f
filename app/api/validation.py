"""The answer to a request the API cannot accept: 422 with what is wrong, never the input.

FastAPI's own handler echoes each error's `input`: a 50 MB body came back as a 52 MB reply,
and a lone surrogate in the input (`{"message": "hi \\ud800"}`) made the reply impossible
to encode, a 500 that also reset the keep-alive connection. This handler keeps each
error's location, message and type only, with every text made one short printable line
(`errors.one_line`) and valid UTF-8, and at most MAX_ERRORS errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.errors import one_line

__all__ = ["MAX_ERRORS", "validation_error"]

MAX_ERRORS = 20
PART_CHARS = 64
MESSAGE_CHARS = 300


def _text(value: object, limit: int) -> str:
    """`value` as one short printable line; `one_line` drops a lone surrogate (a control
    character to Unicode), so the line is always valid UTF-8."""
    return one_line(str(value), limit)


def _error(error: Mapping[str, object]) -> dict[str, object]:
    location = error.get("loc", ())
    parts = cast(Sequence[object], location) if isinstance(location, list | tuple) else ()
    return {
        "loc": [part if isinstance(part, int) else _text(part, PART_CHARS) for part in parts],
        "msg": _text(error.get("msg", "invalid"), MESSAGE_CHARS),
        "type": _text(error.get("type", "invalid"), PART_CHARS),
    }


async def validation_error(_request: Request, exc: Exception) -> JSONResponse:
    errors: Sequence[Mapping[str, object]] = (
        exc.errors() if isinstance(exc, RequestValidationError) else ()
    )
    detail = [_error(error) for error in errors[:MAX_ERRORS]]
    return JSONResponse({"detail": detail}, status_code=422)
