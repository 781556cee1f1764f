"""Web pages and local servers (issue 27): every server answers only the Host names it
serves (DNS rebinding), and the app's API only its own page (cross-site requests).

Raw requests on each server, in-process on a free port: the Host header is what a page on
attacker.example would send once its name points at 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_llm import build_settings, serve_mock
from mock_llm.record.recorder import RecorderSettings, Upstream, serve_recorder
from servekit.allowed_hosts import HostPolicy

from ...support.deadlines import DEADLINE_S
from ...support.servers import TEST_FLOWS, app_settings, serve_app, serve_guard
from ..conftest import AppUnderTest

ROGUE = "attacker.example"
GIVEN = "notes.lan"

Start = Callable[[str, Path, tuple[str, ...]], AbstractContextManager[str]]


@contextmanager
def app(mock_url: str, data: Path, allowed: tuple[str, ...]) -> Generator[str]:
    settings = app_settings(mock_url, data, SG_ALLOWED_HOSTS=",".join(allowed))
    with serve_app(settings) as url:
        yield url


@contextmanager
def guard(mock_url: str, data: Path, allowed: tuple[str, ...]) -> Generator[str]:
    del data
    with serve_guard(mock_url, hosts=HostPolicy.of(allowed)) as url:
        yield url


@contextmanager
def mock(mock_url: str, data: Path, allowed: tuple[str, ...]) -> Generator[str]:
    del mock_url, data
    with serve_mock(build_settings((TEST_FLOWS,), hosts=HostPolicy.of(allowed))) as url:
        yield url


@contextmanager
def recorder(mock_url: str, data: Path, allowed: tuple[str, ...]) -> Generator[str]:
    upstream = Upstream.parse(f"{mock_url}/v1")
    settings = RecorderSettings(upstream, data / "recording.yaml", hosts=HostPolicy.of(allowed))
    with serve_recorder(settings) as (url, _):
        yield url


SERVERS: dict[str, tuple[Start, str]] = {
    "app": (app, "/api/history"),
    "guard": (guard, "/v1/models"),
    "mock": (mock, "/v1/models"),
    "recorder": (recorder, "/v1/models"),
}
"""Each server, and a path it answers with a 200 on a request it serves."""


@pytest.fixture(params=sorted(SERVERS), scope="module")
def server(
    request: pytest.FixtureRequest, mock_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """Each server with one name given (`notes.lan`): its URL and a path it answers."""
    start, path = SERVERS[request.param]
    with start(mock_url, tmp_path_factory.mktemp(request.param), (GIVEN,)) as url:
        yield url, path


def get(url: str, path: str, **headers: str) -> httpx.Response:
    return httpx.get(f"{url}{path}", headers=headers, timeout=DEADLINE_S)


def message_of(response: httpx.Response) -> str:
    """The refusal's message, in the app's shape or the OpenAI one."""
    body: dict[str, Any] = response.json()
    return body["detail"] if "detail" in body else body["error"]["message"]


def port_of(url: str) -> str:
    return url.rsplit(":", 1)[1]


def test_every_server_refuses_a_host_it_does_not_serve_with_421_naming_it(
    server: tuple[str, str],
):
    url, path = server
    response = get(url, path, host=f"{ROGUE}:{port_of(url)}")
    assert response.status_code == 421, response.text
    assert f"--allowed-hosts {ROGUE}" in message_of(response)


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", GIVEN.upper()])
def test_every_server_answers_loopback_its_address_and_a_name_given(
    server: tuple[str, str], name: str
):
    url, path = server
    assert get(url, path, host=f"{name}:{port_of(url)}").status_code == 200


def test_a_server_given_no_names_refuses_a_name_another_was_given(mock_url: str, tmp_path: Path):
    with mock(mock_url, tmp_path, ()) as url:
        assert get(url, "/v1/models", host=GIVEN).status_code == 421


# --- the app's API and other sites' pages -----------------------------------------------

TOOL = "http://tool.lan:3000"
"""An origin the app is told to allow (SG_ALLOWED_ORIGINS)."""


@pytest.fixture(scope="module")
def app_allowing_tool(mock_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = app_settings(mock_url, tmp_path_factory.mktemp("app-cors"), SG_ALLOWED_ORIGINS=TOOL)
    with serve_app(settings) as url:
        yield url


def ask(url: str, question: str, **headers: str) -> httpx.Response:
    body = {"message": question}
    return httpx.post(f"{url}/api/chat", json=body, headers=headers, timeout=DEADLINE_S)


def asked(url: str, question: str) -> bool:
    turns = get(url, "/api/history?limit=200").json()["turns"]
    return any(turn["question"] == question for turn in turns)


def test_the_app_refuses_an_api_read_from_another_sites_page_with_403(notes_app: AppUnderTest):
    response = get(notes_app.url, "/api/history", origin=f"http://{ROGUE}")
    assert response.status_code == 403
    assert f"http://{ROGUE}" in message_of(response)
    assert "access-control-allow-origin" not in response.headers


def test_the_app_runs_no_turn_for_another_sites_page(notes_app: AppUnderTest, key: str):
    question = f"When do backups run? [[mock:clean#{key}]]"
    response = ask(notes_app.url, question, origin=f"http://127.0.0.1:{port_of(notes_app.url)}1")
    assert response.status_code == 403
    assert not asked(notes_app.url, question)


def test_the_app_refuses_a_cross_site_navigation_with_no_origin(notes_app: AppUnderTest):
    response = get(notes_app.url, "/api/history", **{"sec-fetch-site": "cross-site"})
    assert response.status_code == 403


def test_the_app_answers_its_own_page(notes_app: AppUnderTest, key: str):
    question = f"When do backups run? [[mock:clean#{key}]]"
    own = {"origin": notes_app.url, "sec-fetch-site": "same-origin"}
    assert ask(notes_app.url, question, **own).status_code == 200
    assert asked(notes_app.url, question)


def test_the_app_page_itself_is_served_to_a_link_from_another_site(notes_app: AppUnderTest):
    response = get(notes_app.url, "/", **{"sec-fetch-site": "cross-site"})
    assert response.status_code == 200


def test_an_allowed_origin_gets_the_api_with_cors_headers(app_allowing_tool: str):
    response = get(app_allowing_tool, "/api/history", origin=TOOL)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == TOOL


def test_an_allowed_origins_preflight_is_answered(app_allowing_tool: str):
    response = httpx.options(
        f"{app_allowing_tool}/api/chat",
        headers={
            "origin": TOOL,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
        timeout=DEADLINE_S,
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == TOOL


def test_an_origin_not_allowed_gets_no_cors_headers_where_others_are_allowed(
    app_allowing_tool: str,
):
    response = get(app_allowing_tool, "/api/history", origin=f"http://{ROGUE}")
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers
