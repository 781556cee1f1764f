"""The guard proxy in front of the mock, with the official openai SDK as the client.

One built-in flow of each outcome class whose first answer has no tool call
(played_flows.sample; every flow is replayed through the route's guards in
tests/unit/guard/test_guard_stream.py) is one whole turn through the proxy, so its `expect`
block (builtin_flows.yaml) is what the client must get: the text shown, the recovery (two
upstream requests), the malformed-reply error, and the stripped count in the proxy's log
line. Clean streams and tool calls go out byte for byte; faults
pass through; the client's API key goes upstream and never into a log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import httpx
import openai
import pytest
import uvicorn
from openai.types.chat import ChatCompletionMessageParam
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from guardrail.policy import MALFORMED_REPLY
from mock_llm import Flow
from servekit.in_thread import serve_in_thread

from ...support.deadlines import DEADLINE_S
from ...support.families import hidden_canary
from ...support.journal import settled_journal
from ...support.log_lines import stripped_in_log
from ...support.ports import refusing_port
from ...support.servers import serve_bare_guard, serve_guard
from ...support.sse import lines_to_first_comment
from ..conftest import GUARD_WAYS, guard_url, sdk_for
from ..helpers.pass_through import assert_passed_on_as_is
from ..helpers.played_flows import FLOWS, ONE_REQUEST_TURNS, sample
from ..helpers.recovery import (
    RECOVERY_CUT,
    RECOVERY_FAULTS,
    RECOVERY_REFUSED,
    SYSTEM,
    add_flows,
    assert_chat_recovery,
)

IDS = re.compile(rb'"id":"[^"]*"|"created":\d+')


@pytest.fixture(scope="module")
def proxy_url(mock_url: str) -> Iterator[str]:
    with serve_guard(mock_url) as url:
        yield url


SERVERS = {"proxy": serve_guard, "bare": serve_bare_guard}
"""The guard proxy's two servers: the full one (uvicorn, Starlette, aiohttp) and the bare
install's (guard/bare: asyncio and h11 in front of the in-process transport)."""


@pytest.fixture(params=list(SERVERS))
def serving(request: pytest.FixtureRequest) -> Callable[..., AbstractContextManager[str]]:
    """Serves a guard proxy in front of an upstream, each server in turn."""
    return SERVERS[request.param]


@pytest.fixture(params=list(SERVERS))
def any_proxy(request: pytest.FixtureRequest) -> str:
    """The module's guard proxy, each server in turn."""
    return request.getfixturevalue("proxy_url" if request.param == "proxy" else "bare_url")


@pytest.fixture(params=GUARD_WAYS)
async def sdk(request: pytest.FixtureRequest, mock_url: str) -> AsyncIterator[openai.AsyncOpenAI]:
    url, guarded = guard_url(request, mock_url)
    async with sdk_for(url, guarded=guarded) as client:
        yield client


def messages(flow: str, key: str) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"},
    ]


async def streamed_text(sdk: openai.AsyncOpenAI, flow: str, key: str) -> str:
    stream = await sdk.chat.completions.create(
        model="m",
        messages=messages(flow, key),
        stream=True,
    )
    parts: list[str] = []
    async with asyncio.timeout(DEADLINE_S):
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
    return "".join(parts)


async def whole_text(sdk: openai.AsyncOpenAI, flow: str, key: str) -> str:
    completion = await sdk.chat.completions.create(model="m", messages=messages(flow, key))
    return completion.choices[0].message.content or ""


# --- the contract, flow by flow -----------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", sample(ONE_REQUEST_TURNS))
async def test_each_flow_reaches_the_client_as_its_expect_block_says(
    sdk: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
    name: str,
    stream: bool,
):
    caplog.set_level(logging.INFO, logger="guard")
    flow: Flow = FLOWS[name]
    expect = flow.expect_for("m")  # the proxy's default, auto, judges by the model asked for
    assert expect is not None
    read = streamed_text if stream else whole_text
    if expect.error == "malformed":
        with pytest.raises(openai.APIError, match=MALFORMED_REPLY):
            await read(sdk, name, key)
    else:
        shown = await read(sdk, name, key)
        assert shown == expect.shown
        if canary := hidden_canary(flow, "m"):
            assert canary not in shown
    entries = await settled_journal(http, key, count=expect.requests)
    assert len(entries) == expect.requests
    assert stripped_in_log(caplog, "chat") == [expect.stripped_chars]
    if expect.recovery:
        assert_chat_recovery(entries, SYSTEM)


async def test_a_recovered_stream_is_one_completion_to_the_client(any_proxy: str, key: str):
    body = {"model": "m", "stream": True, "messages": messages("scaffold-split", key)}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{any_proxy}/v1/chat/completions", json=body)
    events = [line[6:] for line in reply.text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert len({chunk["id"] for chunk in chunks}) == 1
    assert len({chunk["created"] for chunk in chunks}) == 1
    deltas = [choice["delta"] for chunk in chunks for choice in chunk["choices"]]
    finishes = [c["finish_reason"] for chunk in chunks for c in chunk["choices"]]
    assert sum("role" in delta for delta in deltas) == 1
    assert sum(reason is not None for reason in finishes) == 1
    expect = FLOWS["scaffold-split"].expect
    assert expect is not None
    assert "".join(delta.get("content") or "" for delta in deltas) == expect.shown


# --- byte for byte ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", ["clean", "thinking", "tool-then-answer"])
async def test_what_the_guardrail_leaves_alone_goes_out_byte_for_byte(
    any_proxy: str, mock_url: str, key: str, name: str, stream: bool
):
    def body(turn: str) -> dict[str, Any]:
        return {"model": "m", "stream": stream, "messages": messages(name, turn)}

    await assert_passed_on_as_is((mock_url, any_proxy), "/v1/chat/completions", body, key, IDS)


# --- faults and everything else pass through ------------------------------------------------


async def test_a_rate_limit_passes_through_with_its_retry_after(any_proxy: str, key: str):
    body = {"model": "m", "stream": True, "messages": messages("rate-limited", key)}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{any_proxy}/v1/chat/completions", json=body)
    assert reply.status_code == 429
    assert reply.headers["retry-after"] == "1"
    assert reply.json()["error"]["type"] == "rate_limit_exceeded"


async def test_a_server_error_passes_through(sdk: openai.AsyncOpenAI, key: str):
    with pytest.raises(openai.InternalServerError) as caught:
        await streamed_text(sdk, "error-then-ok", key)
    assert caught.value.status_code == 503


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_stream_cut_by_the_upstream_is_an_error_for_the_client(
    sdk: openai.AsyncOpenAI, key: str, stream: bool
):
    with pytest.raises(openai.APIError, match="cut off"):
        await (streamed_text if stream else whole_text)(sdk, "drop-mid-stream", key)


async def test_other_paths_pass_through_unchanged(any_proxy: str, mock_url: str):
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        direct = await client.get(f"{mock_url}/v1/models")
        proxied = await client.get(f"{any_proxy}/v1/models")
        missing = await client.post(f"{any_proxy}/v1/embeddings", json={"input": "x"})
        missing_direct = await client.post(f"{mock_url}/v1/embeddings", json={"input": "x"})
    assert (proxied.status_code, proxied.json()) == (direct.status_code, direct.json())
    assert (missing.status_code, missing.content) == (
        missing_direct.status_code,
        missing_direct.content,
    )


async def test_a_client_that_leaves_closes_the_upstream_stream(
    any_proxy: str, http: httpx.AsyncClient, key: str
):
    body = {"model": "m", "stream": True, "messages": messages("stall", key)}
    async with (
        asyncio.timeout(DEADLINE_S),
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
        client.stream("POST", f"{any_proxy}/v1/chat/completions", json=body) as reply,
    ):
        async for line in reply.aiter_lines():
            if '"content":"' in line and '"content":""' not in line:
                break  # the first words are here; the model goes silent for 30 s next
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


# --- the client's key -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def echo_upstream() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """An upstream that records each request's headers and answers a clean completion."""
    seen: list[dict[str, str]] = []

    async def completions(request: Request) -> JSONResponse:
        seen.append(dict(request.headers))
        message = {"role": "assistant", "content": "Backups run nightly."}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return JSONResponse({"id": "c1", "object": "chat.completion", "choices": [choice]})

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    with serve_in_thread(uvicorn.Config(app, log_level="warning")) as url:
        yield url, seen


async def test_the_clients_api_key_goes_upstream_and_never_into_a_log(
    echo_upstream: tuple[str, list[dict[str, str]]],
    caplog: pytest.LogCaptureFixture,
    serving: Callable[..., AbstractContextManager[str]],
):
    caplog.set_level(logging.DEBUG)
    upstream, seen = echo_upstream
    with serving(upstream) as url:
        async with sdk_for(url, api_key="sk-secret-4711") as client:
            completion = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
    assert completion.choices[0].message.content == "Backups run nightly."
    assert seen[-1]["authorization"] == "Bearer sk-secret-4711"
    assert seen[-1]["accept-encoding"] == "identity"  # the proxy reads the answer
    assert "sk-secret-4711" not in caplog.text


# --- when the recovery or the upstream fails --------------------------------------------------

SHORT_STALL_TEXT = "Backups run nightly at 02:00 with restic to the NAS."
RUNTIME_FLOWS = {
    "guard-short-stall": {
        "steps": [
            {
                "content": SHORT_STALL_TEXT,
                "fault": {"kind": "stall", "after_chunks": 3, "seconds": 0.3},
            }
        ]
    },
    **RECOVERY_FAULTS,
}


@pytest.fixture(scope="module")
def runtime_flows(mock_url: str) -> None:
    add_flows(mock_url, RUNTIME_FLOWS)


@pytest.mark.usefixtures("runtime_flows")
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_refuses_passes_its_error_on(
    sdk: openai.AsyncOpenAI, key: str, stream: bool
):
    with pytest.raises(openai.APIError) as caught:
        await (streamed_text if stream else whole_text)(sdk, RECOVERY_REFUSED, key)
    if not stream:
        assert isinstance(caught.value, openai.InternalServerError)
        assert caught.value.status_code == 503


@pytest.mark.usefixtures("runtime_flows")
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_cuts_is_an_error_for_the_client(
    sdk: openai.AsyncOpenAI, key: str, stream: bool
):
    with pytest.raises(openai.APIError, match="cut off"):
        await (streamed_text if stream else whole_text)(sdk, RECOVERY_CUT, key)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_malformed_stream_reaches_the_client_as_it_reaches_it_directly(
    any_proxy: str, mock_url: str, key: str, stream: bool
):
    def body(turn: str) -> dict[str, Any]:
        return {"model": "m", "stream": stream, "messages": messages("malformed-sse", turn)}

    await assert_passed_on_as_is((mock_url, any_proxy), "/v1/chat/completions", body, key, IDS)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/messages"])
async def test_a_body_that_is_not_a_json_object_is_the_upstreams_to_answer(
    any_proxy: str, mock_url: str, path: str
):
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        for body in (b"not json", b"[1, 2]", b"[" * 50_000):  # the last: nested past the limit
            direct = await client.post(f"{mock_url}{path}", content=body)
            proxied = await client.post(f"{any_proxy}{path}", content=body)
            assert (proxied.status_code, proxied.json()) == (direct.status_code, direct.json())


async def test_an_unreachable_upstream_is_a_502_that_says_so(
    serving: Callable[..., AbstractContextManager[str]],
):
    with refusing_port() as port, serving(f"http://127.0.0.1:{port}") as url:
        async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
            chat = await client.post(
                f"{url}/v1/chat/completions", json={"model": "m", "messages": []}
            )
            models = await client.get(f"{url}/v1/models?x=1")
    for reply in (chat, models):
        assert reply.status_code == 502
        assert reply.json()["error"]["message"] == "The model server could not be reached."


async def test_a_request_past_the_limits_is_refused_in_the_openai_error_shape(any_proxy: str):
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.get(f"{any_proxy}/v1/models", headers={"x-big": "a" * 40_000})
    assert reply.status_code == 431
    assert "headers" in reply.json()["error"]["message"]


async def test_a_silent_upstream_gets_the_client_keep_alive_comments(
    mock_url: str,
    http: httpx.AsyncClient,
    key: str,
    serving: Callable[..., AbstractContextManager[str]],
):
    body = {"model": "m", "stream": True, "messages": messages("stall", key)}
    with serving(mock_url, keepalive_s=0.05) as url:
        # the model is silent for 30 s: the comment comes in its place
        seen = await lines_to_first_comment(f"{url}/v1/chat/completions", body)
    assert seen[-1] == ": keep-alive"
    assert any('"content":"' in line for line in seen)  # after the first words
    [entry] = await settled_journal(http, key)  # leaving mid-silence closed the stream too
    assert entry.outcome == "client_disconnected"


@pytest.mark.usefixtures("runtime_flows")
async def test_a_stream_resumes_whole_after_the_keep_alives_of_a_silence(
    mock_url: str, key: str, serving: Callable[..., AbstractContextManager[str]]
):
    body = {"model": "m", "stream": True, "messages": messages("guard-short-stall", key)}
    with serving(mock_url, keepalive_s=0.05) as url:
        async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
            reply = await client.post(f"{url}/v1/chat/completions", json=body)
    lines = reply.text.split("\n\n")
    assert ": keep-alive" in lines
    chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == SHORT_STALL_TEXT
    assert lines[-2] == "data: [DONE]"
