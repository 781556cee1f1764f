"""The app's model client against a hostile model server (issue 27), end to end over HTTP.

Each case is one answer of `tests/support/hostile_upstream.py`. A bound the app keeps ends
the turn with one `error` frame of plain copy, no query-log row and a warning log line
naming the bound (the app's failure conventions, scaffold_guard.app.turn); what the app can read
(invalid UTF-8, a split character, choices other than 0) ends the turn normally. The bounds are made
small here (`SMALL_BYTES`, `SMALL_CHARS`), so no test moves much more than 16 MiB;
benchmarks/hostile_clients.py measures the defaults' memory.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterator
from functools import partial

import httpx
import pytest

from scaffold_guard.app.config import Settings
from scaffold_guard.app.rag.llm.errors import MSG_MALFORMED, MSG_TOO_LONG
from servekit.sse import DEFAULT_MAX_LINE_BYTES

from ...support.deadlines import DEADLINE_S
from ...support.hostile_upstream import (
    CLEAN_ANSWER,
    ENDLESS,
    INVALID_SHOWN,
    LONG_COMMENT,
    SPLIT_TEXT,
    HostileUpstream,
    Script,
    gzip_bomb,
    serve_hostile_upstream,
)
from ...support.servers import app_settings, serve_app
from ...support.sse import ask
from .test_turn_faults import has_row, terminal

SMALL_BYTES = 2 * DEFAULT_MAX_LINE_BYTES  # so a long line meets the line bound first
SMALL_CHARS = 256 * 1024
REFUSED = {
    "long-line": (MSG_MALFORMED, "reason=stream-line-too-long"),
    "opener": (MSG_TOO_LONG, f"reason=reply-over-{SMALL_CHARS}-characters"),
    "gzip-bomb": (MSG_TOO_LONG, f"reason=reply-over-{SMALL_BYTES}-bytes"),
}
READ = {"invalid-utf8": INVALID_SHOWN, "split-character": SPLIT_TEXT, "many-choices": CLEAN_ANSWER}


SCRIPTS = {**ENDLESS, "gzip-bomb": Script(partial(gzip_bomb, block=LONG_COMMENT), gzip=True)}
"""ENDLESS, its bomb inflating to comment lines of 1 KiB, not of 14 bytes: the bound is on
the bytes read, and a million lines to parse only made the test slow (the full-size case
is benchmarks/hostile_clients.py's)."""


@pytest.fixture(scope="module")
def upstream() -> Iterator[HostileUpstream]:
    with serve_hostile_upstream(SCRIPTS) as served:
        yield served


@pytest.fixture(scope="module")
def settings(upstream: HostileUpstream, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    loaded = app_settings(upstream.url, tmp_path_factory.mktemp("hostile-app"))
    return dataclasses.replace(
        loaded, llm_max_reply_bytes=SMALL_BYTES, llm_max_reply_chars=SMALL_CHARS
    )


@pytest.fixture(scope="module")
def app_url(settings: Settings) -> Iterator[str]:
    with serve_app(settings) as url:
        yield url


@pytest.fixture
async def app(app_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=app_url, timeout=DEADLINE_S) as client:
        yield client


def hostile(case: str) -> str:
    return f"When do backups run? [[hostile:{case}]]"


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_a_reply_past_a_bound_ends_the_turn_with_one_error_frame_and_no_row(
    app: httpx.AsyncClient, settings: Settings, case: str
) -> None:
    turn = await ask(app, hostile(case))

    detail, reason = REFUSED[case]
    assert terminal(turn) == {"type": "error", "turn": turn.turn_id, "detail": detail}
    assert not await has_row(app, turn.turn_id)
    log = settings.log_file.read_text(encoding="utf-8")
    assert f"chat turn={turn.turn_id} outcome=error cause=LLMError {reason}" in log


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_the_app_stops_reading_a_refused_reply_long_before_its_end(
    app: httpx.AsyncClient, upstream: HostileUpstream, case: str
) -> None:
    await ask(app, hostile(case))

    assert await asyncio.to_thread(upstream.ended[case].wait, DEADLINE_S)
    assert upstream.sent[case] < 2 * SMALL_BYTES  # endless, or 50 MB


@pytest.mark.parametrize("case", sorted(READ))
async def test_a_reply_the_app_can_read_is_shown_and_logged_as_a_normal_turn(
    app: httpx.AsyncClient, case: str
) -> None:
    turn = await ask(app, hostile(case))

    assert terminal(turn)["type"] == "done"
    assert turn.text == READ[case]
    assert await has_row(app, turn.turn_id)


@pytest.mark.parametrize("case", sorted(SCRIPTS))
async def test_a_concurrent_clean_turn_completes_while_a_hostile_reply_is_read(
    app: httpx.AsyncClient, case: str
) -> None:
    _, clean = await asyncio.gather(ask(app, hostile(case)), ask(app, "When do backups run?"))

    assert terminal(clean)["type"] == "done"
    assert clean.text == CLEAN_ANSWER
    assert await has_row(app, clean.turn_id)
