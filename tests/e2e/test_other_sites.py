"""Other sites' pages in a real browser (issue 27): a page whose name was rebound to
127.0.0.1 cannot read the app, another site's page cannot run a turn, and an origin the
app is told to allow can.

Chromium resolves every name under .test to 127.0.0.1 (conftest); a page "served" by such
a name is fulfilled by Playwright's router, so its origin is the attacker's while its
requests reach the real app, as after DNS rebinding.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route

from ..support.servers import app_settings, serve_app
from .conftest import Stack

EMPTY_PAGE = "<!doctype html><title>elsewhere</title><p>elsewhere</p>"

READ_HISTORY = """async (url) => {
    try {
        const response = await fetch(url);
        return {status: response.status, text: await response.text()};
    } catch (error) {
        return {status: 0, text: String(error)};
    }
}"""

ASK = """async ([url, question]) => {
    try {
        const response = await fetch(url, {
            method: 'POST',
            headers: {'content-type': 'application/json'},
            body: JSON.stringify({message: question}),
        });
        return {status: response.status, text: await response.text()};
    } catch (error) {
        return {status: 0, text: String(error)};
    }
}"""


def open_page_at(page: Page, origin: str) -> None:
    """Show an empty page whose origin is `origin` (no server behind it)."""

    def fulfil(route: Route) -> None:
        route.fulfill(status=200, content_type="text/html", body=EMPTY_PAGE)

    page.route(f"{origin}/elsewhere.html", fulfil)
    page.goto(f"{origin}/elsewhere.html")


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def test_a_page_on_a_rebound_name_cannot_read_the_history(tab: Page, stack: Stack, key: str):
    question = f"When do backups run? [[mock:clean#{key}]]"
    origin = f"http://127.0.0.1:{port_of(stack.app_url)}"
    tab.goto(f"{origin}/")  # a turn of the user's own, on the real page
    tab.evaluate(ASK, [f"{origin}/api/chat", question])
    rebound = f"http://rebound.test:{port_of(stack.app_url)}"
    open_page_at(tab, rebound)
    read: dict[str, Any] = tab.evaluate(READ_HISTORY, f"{rebound}/api/history")
    assert read["status"] == 421, read
    assert question not in read["text"]


def test_another_sites_page_cannot_run_a_turn(tab: Page, stack: Stack, key: str):
    question = f"When do backups run? [[mock:clean#{key}]]"
    open_page_at(tab, "http://elsewhere.test:8123")
    asked: dict[str, Any] = tab.evaluate(ASK, [f"{stack.app_url}/api/chat", question])
    assert asked["status"] == 0, asked  # the browser refused to show the answer
    assert not [turn for turn in stack.history() if turn["question"] == question]


TOOL = "http://tool.test:8124"


@pytest.fixture(scope="module")
def app_allowing_tool(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("app-cors")
    with serve_app(app_settings(stack.mock_url, data, SG_ALLOWED_ORIGINS=TOOL)) as url:
        yield url


def test_an_allowed_origins_page_runs_a_turn_and_reads_the_answer(
    tab: Page, app_allowing_tool: str, key: str
):
    question = f"When do backups run? [[mock:clean#{key}]]"
    open_page_at(tab, TOOL)
    asked: dict[str, Any] = tab.evaluate(ASK, [f"{app_allowing_tool}/api/chat", question])
    assert asked["status"] == 200, asked
    assert '"type":"done"' in asked["text"].replace(" ", "")
    read: dict[str, Any] = tab.evaluate(READ_HISTORY, f"{app_allowing_tool}/api/history")
    assert question in read["text"]
