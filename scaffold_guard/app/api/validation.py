"""The answer to a request the API cannot accept: 422 with what is wrong, never the input.

Deliberate choices:
- Not FastAPI's own handler: it echoes each error's `input`, so a huge body comes back
  huge and a lone surrogate makes the reply unencodable (a 500). This keeps location,
  message and type only, each one short printable UTF-8 line, at most MAX_ERRORS.
- A body that is not JSON (a form, text/plain: what a cross-site form can send) is a 415
  naming the type to use; an empty or non-object body and invalid JSON say so;
  `body_parse_error` says which parse failure FastAPI's bare 400 hides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from email.message import Message
from typing import cast

from fastapi import Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from guardrail.json_shapes import as_object
from scaffold_guard.app.errors import one_line

__all__ = ["MAX_ERRORS", "body_parse_error", "is_json_type", "validation_error"]

MAX_ERRORS = 20
PART_CHARS = 64
MESSAGE_CHARS = 300
JSON_EXAMPLE = '{"message": "When do backups run?"}'
FASTAPI_PARSE_ERROR = "There was an error parsing the body"


def _text(value: object, limit: int) -> str:
    """`value` as one short printable line; `one_line` drops a lone surrogate (a control
    character to Unicode), so the line is always valid UTF-8."""
    return one_line(str(value), limit)


def _error(error: Mapping[str, object]) -> dict[str, object]:
    location = error.get("loc", ())
    parts = cast(Sequence[object], location) if isinstance(location, list | tuple) else ()
    kind = _text(error.get("type", "invalid"), PART_CHARS)
    message = _body_message(tuple(parts), kind, error) or error.get("msg", "invalid")
    return {
        "loc": [part if isinstance(part, int) else _text(part, PART_CHARS) for part in parts],
        "msg": _text(message, MESSAGE_CHARS),
        "type": kind,
    }


def _body_message(parts: tuple[object, ...], kind: str, error: Mapping[str, object]) -> str | None:
    """The API's own words for what is wrong with the body as a whole, if that is the error."""
    if not parts or parts[0] != "body":
        return None
    if kind == "json_invalid":
        context = error.get("ctx")
        why = (as_object(context) or {}).get("error")
        return f"The request body is not valid JSON ({why or 'decode error'})."
    if len(parts) != 1:
        return None
    if kind == "missing":
        return f"The request body is empty; send a JSON object such as {JSON_EXAMPLE}."
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        return f"The request body must be a JSON object such as {JSON_EXAMPLE}."
    return None


def is_json_type(content_type: str | None) -> bool:
    """Whether a Content-Type is JSON (`application/json`, `application/*+json`), as
    FastAPI decides whether to parse a body."""
    if not content_type:
        return False
    message = Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    errors: Sequence[Mapping[str, object]] = (
        exc.errors() if isinstance(exc, RequestValidationError) else ()
    )
    sent_body = request.headers.get("content-length", "0") != "0" or "transfer-encoding" in (
        request.headers
    )
    if (
        sent_body
        and not is_json_type(request.headers.get("content-type"))
        and any(tuple(cast(Sequence[object], e.get("loc", ())))[:1] == ("body",) for e in errors)
    ):
        # FastAPI reads only a JSON body, so the model saw the raw bytes: say why.
        return JSONResponse(
            {"detail": "The request body must be JSON, sent with Content-Type: application/json."},
            status_code=415,
        )
    detail = [_error(error) for error in errors[:MAX_ERRORS]]
    return JSONResponse({"detail": detail}, status_code=422)


async def body_parse_error(request: Request, exc: Exception) -> Response:
    """FastAPI's bare 400 for a body its JSON parser failed on, made to say why; every
    other HTTP error goes to FastAPI's own handler."""
    assert isinstance(exc, HTTPException)
    if exc.status_code != 400 or exc.detail != FASTAPI_PARSE_ERROR:
        return await http_exception_handler(request, exc)
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        why = "it is not valid UTF-8"
    elif isinstance(cause, RecursionError):
        why = "it nests too deeply"
    elif isinstance(cause, ValueError) and "digits" in str(cause):
        why = "it holds a number with too many digits"
    else:
        why = "it could not be parsed"
    return JSONResponse({"detail": f"The request body is not valid JSON: {why}."}, status_code=400)
