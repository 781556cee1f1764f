"""Every response of both servers carries the security headers (servekit/security_headers.py).

The app serves the chat page, so its Content-Security-Policy is the page's strict one (only
its own origin, nothing inline); the mock serves data only, so nothing may load from its
answers at all. Refusals of RequestLimits carry them too (regression, issue 12: the app
added its headers inside RequestLimits, so a 413 or 431 went out without them; the mock
sent none). That the page still works under its policy is the e2e suite's job (tests/e2e,
the axe audit included); here the page's HTML is also checked for anything inline the
policy would block.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx
import pytest

from mock_llm.server.app import API_POLICY
from scaffold_guard.app.main import FRONTEND, PAGE_POLICY
from servekit.security_headers import security_headers

from ...support.sse import chat_body
from ..conftest import AppUnderTest

BIG_HEADER = {"x-big": "a" * 40_000}


def assert_secured(response: httpx.Response, policy: str) -> None:
    for name, value in security_headers(policy):
        assert response.headers.get_list(name) == [value], name


APP_REQUESTS = [
    ("GET", "/", {}),
    ("GET", "/static/app.js", {}),
    ("GET", "/static/style.css", {}),
    ("GET", "/static/vendor/marked.esm.js", {}),
    ("GET", "/favicon.ico", {}),
    ("GET", "/api/history", {}),
    ("GET", "/api/history?limit=0", {}),
    ("GET", "/api/info", {}),
    ("GET", "/healthz", {}),
    ("GET", "/nope", {}),
    ("PUT", "/api/chat", {}),
    ("POST", "/api/chat", {"content": b"message=hi"}),
    ("POST", "/api/chat", {"json": {"message": ""}}),
    ("POST", "/api/chat", {"json": {"message": "x" * 70_000}}),
    ("GET", "/healthz", {"headers": BIG_HEADER}),
    ("GET", "/api/history?" + "a" * 9000, {}),
]


@pytest.mark.parametrize(
    ("method", "path", "extra"),
    APP_REQUESTS,
    ids=[f"{m} {p[:40]} {sorted(e)}" for m, p, e in APP_REQUESTS],
)
async def test_every_app_response_carries_the_page_policy(
    app_http: httpx.AsyncClient, method: str, path: str, extra: dict[str, object]
):
    response = await app_http.request(method, path, **extra)  # type: ignore[arg-type]
    assert_secured(response, PAGE_POLICY)


async def test_the_apps_event_stream_carries_the_page_policy(app_http: httpx.AsyncClient):
    async with app_http.stream("POST", "/api/chat", json={"message": "When do backups run?"}) as r:
        assert r.status_code == 200
        assert_secured(r, PAGE_POLICY)
        await r.aread()


MOCK_REQUESTS = [
    ("GET", "/healthz", {}),
    ("GET", "/v1/models", {}),
    ("GET", "/_mock/requests", {}),
    ("GET", "/_mock/requests?nope=1", {}),
    ("GET", "/_mock/flows", {}),
    ("GET", "/_mock/side-calls", {}),
    ("POST", "/v1/chat/completions", {"json": chat_body("hi", stream=False)}),
    ("POST", "/v1/chat/completions", {"content": b"{"}),
    ("GET", "/v1/embeddings", {}),
    ("GET", "/v1/chat/completions", {}),
    ("GET", "/healthz", {"headers": BIG_HEADER}),
]


@pytest.mark.parametrize(
    ("method", "path", "extra"),
    MOCK_REQUESTS,
    ids=[f"{m} {p[:40]} {sorted(e)}" for m, p, e in MOCK_REQUESTS],
)
async def test_every_mock_response_carries_the_data_only_policy(
    http: httpx.AsyncClient, method: str, path: str, extra: dict[str, object]
):
    response = await http.request(method, path, **extra)  # type: ignore[arg-type]
    assert_secured(response, API_POLICY)


async def test_the_mocks_event_stream_carries_the_data_only_policy(http: httpx.AsyncClient):
    async with http.stream("POST", "/v1/chat/completions", json=chat_body("hi")) as response:
        assert response.status_code == 200
        assert_secured(response, API_POLICY)
        await response.aread()


def test_the_page_policy_allows_only_its_own_origin_and_nothing_inline():
    directives: dict[str, str] = {}
    for directive in PAGE_POLICY.split(";"):
        name, _, value = directive.strip().partition(" ")
        directives[name] = value
    assert directives["default-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    allowed = " ".join(directives.values())
    for loose in ("'unsafe-inline'", "'unsafe-eval'", "*", "data:", "http:", "https:"):
        assert loose not in allowed.split()


class _Inline(HTMLParser):
    """What in a page a policy without 'unsafe-inline' would block."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script" and "src" not in names:
            self.found.append("inline <script>")
        if tag == "style":
            self.found.append("<style>")
        self.found += [f"{tag} {n}=" for n in names if n == "style" or n.startswith("on")]
        href = dict(attrs).get("href") or dict(attrs).get("src") or ""
        if re.match(r"\s*(javascript|data|https?):", href, re.IGNORECASE):
            self.found.append(f"{tag} loads {href[:40]}")


def test_the_page_has_nothing_inline_or_remote_that_its_policy_would_block():
    parser = _Inline()
    parser.feed((FRONTEND / "index.html").read_text(encoding="utf-8"))
    assert parser.found == []


def test_the_apps_page_is_served_under_its_policy(notes_app: AppUnderTest):
    response = httpx.get(f"{notes_app.url}/")
    assert response.headers["content-type"].startswith("text/html")
    assert_secured(response, PAGE_POLICY)
