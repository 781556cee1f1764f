"""servekit.same_origin: which requests a browser sent for another site."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.types import Message

from servekit.same_origin import SameOrigin, foreign_origin, parse_origins

NONE: frozenset[str] = frozenset()


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000"),
        ("http://LOCALHOST:8000", "localhost:8000"),
        ("http://notes.lan", "notes.lan:80"),
        ("https://notes.example", "notes.example"),
        ("https://notes.example", "notes.example:443"),
        ("https://[::1]:8000", "[::1]:8000"),
    ],
)
def test_the_pages_own_origin_is_not_foreign(origin: str, host: str):
    assert not foreign_origin(origin, "same-origin", host, NONE)


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("http://attacker.example", "127.0.0.1:8000"),
        ("http://127.0.0.1:3000", "127.0.0.1:8000"),
        ("http://localhost:8000", "127.0.0.1:8000"),
        ("null", "127.0.0.1:8000"),
        ("file://", "127.0.0.1:8000"),
        ("http://127.0.0.1:8000", None),
        ("http://127.0.0.1:99999", "127.0.0.1:99999"),
    ],
)
def test_another_origin_is_foreign(origin: str, host: str | None):
    assert foreign_origin(origin, "cross-site", host, NONE)


def test_an_allowed_origin_is_not_foreign():
    allowed = parse_origins("http://127.0.0.1:3000")
    assert not foreign_origin("http://127.0.0.1:3000", "same-site", "127.0.0.1:8000", allowed)


@pytest.mark.parametrize(("site", "foreign"), [("cross-site", True), ("same-site", False),
                                               ("same-origin", False), ("none", False),
                                               (None, False)])  # fmt: skip
def test_without_an_origin_only_a_cross_site_fetch_is_foreign(site: str | None, foreign: bool):
    assert foreign_origin(None, site, "127.0.0.1:8000", NONE) is foreign


def test_allowed_origins_are_read_lower_case_comma_or_space_separated():
    assert parse_origins("https://A.example, http://b.example:3000/") == {
        "https://a.example",
        "http://b.example:3000",
    }


@pytest.mark.parametrize("bad", ["a.example", "ftp://a.example", "https://a.example/path"])
def test_an_allowed_origin_that_is_not_one_is_an_error_naming_it(bad: str):
    with pytest.raises(ValueError, match=r"allowed origins: .* is not scheme://host"):
        parse_origins(bad)


async def through(headers: list[tuple[bytes, bytes]], path: str = "/api/history") -> list[Message]:
    called: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        called.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    def error_body(status: int, message: str) -> bytes:
        return json.dumps({"status": status, "detail": message}).encode()

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    middleware = SameOrigin(app, error_body=error_body, paths=("/api/",))
    scope = {"type": "http", "method": "GET", "path": path, "headers": headers}
    async with asyncio.timeout(5):
        await middleware(scope, receive, send)
    return sent


async def test_a_foreign_origins_api_request_is_refused_403_naming_the_origin():
    sent = await through([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://evil.example")])
    assert sent[0]["status"] == 403
    detail = json.loads(sent[1]["body"])["detail"]
    assert "http://evil.example" in detail
    assert "SG_ALLOWED_ORIGINS" in detail


async def test_a_foreign_origins_request_outside_the_paths_reaches_the_app():
    sent = await through([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://evil.example")], "/")
    assert sent[0]["status"] == 200


async def test_a_request_with_no_browser_headers_reaches_the_app():
    sent = await through([(b"host", b"127.0.0.1:8000")])
    assert sent[0]["status"] == 200
