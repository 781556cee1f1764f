"""The kit's once-per-run set-up (`[[setup_once]]`) against a page that keeps a setting on
its server, the way Open WebUI keeps "show reasoning": the page signs in on load and keeps
its token in localStorage, and `POST /api/settings` needs that token.

The server is real (the kit's HTTP steps go through the browser context's request API,
which no page route intercepts), served in-process on a free port.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from playwright.sync_api import Browser
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from conformance.browser.session import BrowserSession, new_context
from conformance.browser.setup_steps import SetupFailed
from conformance.profiles.loader import load_profile
from conformance.profiles.model import Profile
from servekit.in_thread import serve_in_thread

from .conftest import TIMEOUT_MS

TOKEN = "tok-7f3a"
PAGE = """<!doctype html><meta charset="utf-8">
<button id="tour-done" onclick="localStorage.setItem('tour', 'done'); this.remove()">
  Skip tour</button>
<form><input id="input"></form>
<script>
  fetch("/api/token").then(r => r.json()).then(b => localStorage.setItem("token", b.token));
</script>"""
SELECTORS = """
[selectors]
input = "#input"
"""
PROFILE = (
    SELECTORS
    + """
[[setup_once]]
click_if_visible = "#tour-done"
within_ms = 2000
[[setup_once]]
wait_for = "#input"
[[setup_once]]
http = "POST /api/settings"
headers = {{ Authorization = "Bearer {{local_storage:token}}" }}
json = {{ ui = {{ expandDetails = true }} }}
{more}
"""
)


class SettingsServer:
    """The app: a page that signs in on load, and a settings endpoint behind its token."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, Any]] = []

    def app(self) -> Starlette:
        async def page(request: Request) -> Response:
            return HTMLResponse(PAGE)

        async def token(request: Request) -> Response:
            return JSONResponse({"token": TOKEN})

        async def settings(request: Request) -> Response:
            auth = request.headers.get("authorization", "")
            if auth != f"Bearer {TOKEN}":
                return JSONResponse({"detail": "Not authenticated"}, status_code=401)
            self.posted.append((auth, await request.json()))
            return JSONResponse({"ok": True})

        return Starlette(
            routes=[
                Route("/", page),
                Route("/api/token", token),
                Route("/api/settings", settings, methods=["POST"]),
            ]
        )


@pytest.fixture
def server() -> Generator[tuple[SettingsServer, str]]:
    app = SettingsServer()
    config = uvicorn.Config(app.app(), log_level="warning")
    with serve_in_thread(config) as url:
        yield app, url + "/"


@pytest.fixture
def sessions(
    browser: Browser, tmp_path: Path, server: tuple[SettingsServer, str]
) -> Generator[Callable[..., BrowserSession]]:
    """`sessions(more)`: a kit browser session on the settings page, its profile PROFILE with
    `more` steps after (`only=True`: SELECTORS and `more` alone); every session is closed at
    the end."""
    opened: list[BrowserSession] = []

    def session_for(more: str = "", *, only: bool = False) -> BrowserSession:
        path = tmp_path / f"profile-{len(opened)}.toml"
        text = SELECTORS + more if only else PROFILE.format(more=more)
        path.write_text(text, encoding="utf-8")
        profile: Profile = load_profile(path)
        context = new_context(browser, profile)
        opened.append(BrowserSession(context, profile, server[1], TIMEOUT_MS / 1000, "off"))
        return opened[-1]

    yield session_for
    for session in opened:
        session.close()


def test_a_once_request_carries_the_token_the_page_keeps(
    sessions: Callable[[str], BrowserSession], server: tuple[SettingsServer, str]
):
    sessions("").set_up_once()
    assert server[0].posted == [(f"Bearer {TOKEN}", {"ui": {"expandDetails": True}})]


def test_once_steps_run_once_however_many_pages_the_run_opens(
    sessions: Callable[[str], BrowserSession], server: tuple[SettingsServer, str]
):
    session = sessions("")
    session.set_up_once()
    session.chat().open()
    session.discard_page()  # a failed play's page is dropped; the context stays
    session.set_up_once()
    session.chat().open()
    tour = session.chat().page.evaluate("() => localStorage.getItem('tour')")
    assert len(server[0].posted) == 1
    assert tour == "done"


def test_a_refused_once_request_stops_with_its_status_and_body(
    sessions: Callable[[str], BrowserSession], server: tuple[SettingsServer, str]
):
    session = sessions('[[setup_once]]\nhttp = "POST /api/settings"\njson = { ui = {} }\n')
    with pytest.raises(SetupFailed) as failed:
        session.set_up_once()
    assert str(failed.value) == (
        f"setup_once[3]: POST {server[1]}api/settings answered HTTP 401:"
        ' \'{"detail":"Not authenticated"}\''
    )


def test_a_once_page_step_that_finds_nothing_names_its_step(
    sessions: Callable[..., BrowserSession],
):
    """Regression: with the short timeout over the whole profile, a slow click on the tour
    button under load failed its own step (setup_once[0]) first; only the failing step runs
    under it now, and the page's load keeps the suite's timeout."""
    session = sessions('[[setup_once]]\nclick = "#no-such-button"\n', only=True)
    page = session.chat().page
    page.set_default_navigation_timeout(TIMEOUT_MS)
    page.set_default_timeout(500)
    with pytest.raises(SetupFailed) as failed:
        session.set_up_once()
    assert str(failed.value) == (
        "setup_once[0] (click '#no-such-button'): Locator.click: Timeout 500ms exceeded."
    )
