"""Assertions the integration tests share about what a server answered over HTTP."""

from __future__ import annotations

import httpx


def assert_openai_error(
    response: httpx.Response, status: int, fragment: str, code: str | None = None
) -> None:
    """`response` is an OpenAI-style error: `status`, the four fields of `error`, a message
    holding `fragment` and, when given, the error `code`."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    if code is not None:
        assert error["code"] == code
    assert fragment in error["message"]
