"""The chat route's own body reading answers every request as a FastAPI body parameter would.

`read_chat_request` replaced FastAPI's `body: ChatRequest` parameter (a fifth of a turn's
CPU went to FastAPI's request handling). The oracle is FastAPI itself: a route declared the
FastAPI way, behind the same error handlers, must give the same status and body for every
request here (and after any FastAPI upgrade).
"""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from scaffold_guard.app.api.chat import ChatRequest, read_chat_request
from scaffold_guard.app.api.validation import body_parse_error, validation_error

JSON = {"content-type": "application/json"}
CASES: list[tuple[str, bytes, dict[str, str]]] = [
    ("valid", b'{"message": "When do backups run?"}', JSON),
    ("valid-with-session", b'{"message": "hi", "session": "tab-0123456789"}', JSON),
    ("json-subtype", b'{"message": "hi"}', {"content-type": "application/vnd.x+json"}),
    (
        "json-with-charset",
        b'{"message": "hi"}',
        {"content-type": "application/json; charset=utf-8"},
    ),
    ("empty-body", b"", JSON),
    ("not-an-object", b"[1, 2]", JSON),
    ("a-string", b'"hello"', JSON),
    ("null", b"null", JSON),
    ("missing-message", b"{}", JSON),
    ("message-not-a-string", b'{"message": 42}', JSON),
    ("blank-message", b'{"message": "   "}', JSON),
    ("zero-width-only", '{"message": "\u200b\u200b"}'.encode(), JSON),
    ("nul-in-message", b'{"message": "a\\u0000b"}', JSON),
    ("too-long", json.dumps({"message": "x" * 4001}).encode(), JSON),
    ("extra-field", b'{"message": "hi", "admin": true}', JSON),
    ("bad-session", b'{"message": "hi", "session": "../../etc"}', JSON),
    ("invalid-json", b'{"message": ', JSON),
    ("trailing-garbage", b'{"message": "hi"} x', JSON),
    ("invalid-utf8", b'{"message": "\xff\xfe"}', JSON),
    ("nested-too-deep", b"[" * 100_000 + b"]" * 100_000, JSON),
    ("too-many-digits", b'{"message": "hi", "n": ' + b"9" * 5000 + b"}", JSON),
    ("lone-surrogate", b'{"message": "hi \\ud800"}', JSON),
    ("form", b"message=hi", {"content-type": "application/x-www-form-urlencoded"}),
    ("text-plain", b'{"message": "hi"}', {"content-type": "text/plain"}),
    ("no-content-type", b'{"message": "hi"}', {}),
]


def _app() -> FastAPI:
    app = FastAPI()
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, body_parse_error)

    @app.post("/fastapi")
    async def fastapi_way(body: ChatRequest) -> Response:  # pyright: ignore[reportUnusedFunction]
        return Response(body.model_dump_json(), media_type="application/json")

    async def ours(request: Request) -> Response:
        body = await read_chat_request(request)
        return Response(body.model_dump_json(), media_type="application/json")

    app.add_route("/ours", ours, methods=["POST"])
    return app


@pytest.mark.parametrize(("body", "headers"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_the_chat_body_is_answered_as_fastapi_answers_it(
    body: bytes, headers: dict[str, str]
):
    transport = httpx.ASGITransport(_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        theirs = await client.post("/fastapi", content=body, headers=headers)
        ours = await client.post("/ours", content=body, headers=headers)
    assert (ours.status_code, ours.json()) == (theirs.status_code, theirs.json())
