"""The SSE bytes as raw httpx sees them: framing, headers, endings, pauses."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import httpx
import pytest

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.sse import chat_body, read_sse


async def test_stream_is_event_stream_of_single_data_lines_ending_in_done(
    http: httpx.AsyncClient, key: str
):
    async with (
        asyncio.timeout(DEADLINE_S),
        http.stream("POST", "/v1/chat/completions", json=chat_body(f"[[mock:clean#{key}]]")) as r,
    ):
        raw = b"".join([part async for part in r.aiter_bytes()])
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["x-request-id"].startswith("mock-")
    events = raw.split(b"\n\n")
    assert events[-1] == b""
    assert events[-2] == b"data: [DONE]"
    assert all(e.startswith(b"data: {") and b"\n" not in e for e in events[:-2])


async def test_chat_completions_also_answers_without_the_v1_prefix(
    http: httpx.AsyncClient, key: str
):
    response = await http.post(
        "/chat/completions", json=chat_body(f"[[mock:clean#{key}]]", stream=False)
    )
    assert response.status_code == 200


async def test_cut_eof_ends_the_body_cleanly_without_done(http: httpx.AsyncClient, key: str):
    result = await read_sse(http, chat_body(f"[[mock:cut-eof#{key}]]"))
    assert result.error is None
    assert not result.done
    assert result.chunks[-1]["choices"][0]["finish_reason"] is None


async def test_non_streamed_cut_is_an_incomplete_body(http: httpx.AsyncClient, key: str):
    with pytest.raises(httpx.RemoteProtocolError):
        await http.post(
            "/v1/chat/completions", json=chat_body(f"[[mock:non-stream-cut#{key}]]", stream=False)
        )


async def test_stall_pauses_the_stream_mid_way_then_finishes_it_whole(
    http: httpx.AsyncClient, key: str
):
    """The pause is read from the mock's own journal, not from when lines reach this client.

    quick-stall sends the role chunk and "one", fires its 0.3 s stall, then the rest. When
    lines arrive here says little (a busy machine can hold the first write back until the
    second has landed too), but the mock times the stream it played: it cannot have ended
    less than the stall after its first chunk went out.
    """
    result = await read_sse(http, chat_body(f"[[mock:quick-stall#{key}]]"))
    assert result.error is None
    assert result.done
    assert len(result.events) == 7  # role, four words, finish, [DONE]: nothing lost
    assert result.joined("content") == "one two three four"
    [entry] = await settled_journal(http, key)
    assert (entry.outcome, entry.chunks_sent) == ("fault", 6)
    assert entry.fault == "stall 0.3s after 2 chunks"
    assert entry.ended_ms is not None
    assert entry.first_chunk_ms is not None
    assert entry.ended_ms - entry.first_chunk_ms >= 300 - 1  # less clock rounding


async def test_the_llama_cpp_dialect_can_be_chosen_per_server_and_a_step_may_say_its_own(
    key: str,
):
    from mock_llm import build_settings, parse_flows, serve_mock

    own = parse_flows(
        "flows:\n  plain:\n    steps:\n      - content: hi\n        dialect: openai\n", "t"
    )
    settings = build_settings(dialect="llama.cpp")
    settings = replace(settings, flows={**settings.flows, **own})
    with serve_mock(settings) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            server = await client.post(
                "/v1/chat/completions", json=chat_body(f"[[mock:clean#{key}]]")
            )
            step = await client.post(
                "/v1/chat/completions", json=chat_body(f"[[mock:plain#{key}]]")
            )
    first = json.loads(server.text.split("\n\n")[0].removeprefix("data: "))
    assert first["choices"][0] == {
        "finish_reason": None, "index": 0, "delta": {"role": "assistant", "content": None}
    }  # fmt: skip
    assert first["system_fingerprint"] == "b0-unknown"
    assert '"logprobs":null' in step.text


async def test_reasoning_field_can_be_chosen_per_server(key: str):
    from mock_llm import build_settings, serve_mock

    with serve_mock(build_settings(reasoning_field="reasoning")) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            result = await read_sse(client, chat_body(f"[[mock:thinking#{key}]]"))
    assert result.joined("reasoning").startswith("The user asks")
    assert result.joined("reasoning_content") == ""
