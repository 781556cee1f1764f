"""Turn-step semantics as a client sees them."""

from __future__ import annotations

import asyncio

import httpx

from mock_llm import build_settings, serve_mock

from ...support.deadlines import DEADLINE_S
from ...support.servers import TEST_FLOWS
from ...support.sse import chat_body, read_sse

NEVER_QUIET_S = 24 * 3600.0  # no pause in a run comes near it


async def contents(client: httpx.AsyncClient, text: str, n: int) -> list[str]:
    return [(await read_sse(client, chat_body(text))).joined("content") for _ in range(n)]


async def test_keyed_turn_repeats_its_last_step(http: httpx.AsyncClient, key: str):
    assert await contents(http, f"[[mock:three-steps#{key}]]", 4) == [
        "first", "second", "third", "third",
    ]  # fmt: skip


async def test_keyless_trigger_typed_twice_behaves_the_same_both_times():
    # A server of its own that never resets a turn for quiet: on the shared one (a 5 s quiet
    # reset), a machine pausing this test for 5 s would restart the turn mid-way.
    with serve_mock(build_settings((TEST_FLOWS,), quiet_reset_s=NEVER_QUIET_S)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            text = "once more [[mock:three-steps]] (keyless)"
            assert await contents(client, text, 6) == ["first", "second", "third"] * 2


async def test_keyless_turn_starts_over_after_a_quiet_spell():
    with serve_mock(build_settings(quiet_reset_s=0.2)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            first = await contents(client, "[[mock:scaffold-recover]]", 1)
            # The quiet spell itself, not a wait for something: it only has a lower bound
            # (the mock clocked the first request before it was answered), which load can
            # only lengthen, never shorten.
            await asyncio.sleep(0.3)
            again = await contents(client, "[[mock:scaffold-recover]]", 1)
    assert first == again
    assert "<|tool_call_start|>" in first[0]


async def test_recovery_request_with_the_same_messages_plays_the_next_step(
    http: httpx.AsyncClient, key: str
):
    body = chat_body(f"[[mock:scaffold-recover#{key}]]")
    first = await read_sse(http, body)
    body["messages"][0]["content"] += " Answer in plain text."
    second = await read_sse(http, body)
    assert "<|tool_call_start|>" in first.joined("content")
    assert second.joined("content").startswith("Backups run nightly")


async def test_message_without_trigger_plays_the_default_flow(http: httpx.AsyncClient):
    result = await read_sse(http, chat_body("just a question, no trigger"))
    assert "default answer" in result.joined("content")
