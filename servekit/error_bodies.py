"""The error bodies of the APIs the servers here answer in, as the official SDKs read them.
Pure. The mock plays them and the guard proxy answers with them.

- OpenAI's (chat completions, the Responses API): `{"error": {"message", "type", "param",
  "code"}}`.
- Anthropic's Messages API: `{"type": "error", "error": {"type", "message"}}`, its `type`
  the one the API gives for the status (429 `rate_limit_error`, 529 `overloaded_error`,
  another 5xx `api_error`, ...), unless a given type is another of Anthropic's.
  `invalid_request_error` does not count as given: it is OpenAI's type for every 4xx,
  which flow files give a 401 or a 404 by default, where Anthropic's API says
  `authentication_error` or `not_found_error`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ANTHROPIC_ERROR_TYPES",
    "anthropic_error_body",
    "anthropic_error_type",
    "openai_error_body",
]

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""The error type Anthropic's API gives with each status."""
_KNOWN_ANTHROPIC_TYPES = frozenset(ANTHROPIC_ERROR_TYPES.values())


def openai_error_body(
    message: str, type: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """The OpenAI error body: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def anthropic_error_type(status: int, given: str | None = None) -> str:
    """The error's `type`: the status's, unless `given` is another of Anthropic's."""
    if given in _KNOWN_ANTHROPIC_TYPES and given != "invalid_request_error":
        return given
    return ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )


def anthropic_error_body(
    status: int, message: str, given_type: str | None = None
) -> dict[str, Any]:
    """Anthropic's error body: `{"type": "error", "error": {"type", "message"}}`."""
    error = {"type": anthropic_error_type(status, given_type), "message": message}
    return {"type": "error", "error": error}
