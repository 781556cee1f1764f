"""The guard's own errors in the OpenAI shape (chat completions and the Responses API).
Pure.

`error_body` is the body of an error the guard answers itself (its type `guard_error`;
`malformed_reply` the code of G3's); `error_event` the in-band event that ends a chat
completion stream (the SDK raises APIError on it); `refusal_message` an upstream error
body's own message, which the guard passes on in its error.
"""

from __future__ import annotations

import json
from typing import Any

from guardrail.json_shapes import string_field
from guardrail.policy import MALFORMED_REPLY
from servekit.error_bodies import openai_error_body
from servekit.json_codec import parse_object
from servekit.sse import json_event


def error_body(message: str, code: str | None = None) -> dict[str, Any]:
    """The OpenAI error body of the guard's own errors (its type `guard_error`)."""
    return openai_error_body(message, "guard_error", code)


def error_json(status: int, message: str, code: str | None = None) -> bytes:
    """`error_body` as the bytes of a whole answer (`status`: its status line's)."""
    del status  # the status line says it
    return json.dumps(error_body(message, code)).encode()


def error_event(message: str, status: int) -> bytes:
    """The OpenAI in-band error event that ends a stream (an SDK raises APIError on it)."""
    code = "malformed_reply" if message == MALFORMED_REPLY else f"upstream_{status}"
    return json_event(error_body(message, code))


def refusal_message(raw: bytes, status: int) -> str:
    """An upstream error body's own message (`error.message`, which Anthropic's shape has
    too), or one that names the status."""
    message = string_field((parse_object(raw) or {}).get("error"), "message")
    return message if message is not None else f"The model server answered {status}."
