"""The LiteLLM guardrail's hooks over real `litellm.acompletion` calls against the mock.

What LiteLLM's proxy does around a guardrail, done in-process: the request goes to the
mock through litellm's own OpenAI client, its stream or completion goes through the hook,
and the one recovery is a real second `litellm.acompletion` (no proxy here, so no router:
the request carries the mock's address). One built-in flow of each outcome class whose first
answer has no tool call (played_flows.sample; every flow goes through the filters, streamed
and whole, in tests/unit/integrations/test_litellm_filter.py) is one turn, and its `expect`
block is what comes out, streamed and whole; the mock's journal shows the recovery request.
LiteLLM's proxy itself: tests/thirdparty.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import litellm
import pytest
from litellm import ModelResponse
from litellm.llms.custom_httpx.async_client_cleanup import (  # pyright: ignore[reportMissingTypeStubs]
    close_litellm_async_clients,
)
from litellm.proxy._types import UserAPIKeyAuth

from guardrail.policy import MALFORMED_REPLY
from mock_llm import Flow
from scaffold_guard.integrations.litellm_guardrail import MalformedReplyError, ScaffoldGuardrail

from ...support.deadlines import DEADLINE_S
from ...support.families import hidden_canary
from ...support.journal import settled_journal
from ...support.litellm_chunks import THIRD_PARTY_WARNINGS
from ..helpers.played_flows import FLOWS, ONE_REQUEST_TURNS, sample
from ..helpers.recovery import SYSTEM, assert_chat_recovery

pytestmark = THIRD_PARTY_WARNINGS

GUARD = ScaffoldGuardrail(guardrail_name="scaffold-guard", event_hook="post_call", default_on=True)
KEY = UserAPIKeyAuth()


@pytest.fixture(autouse=True)
async def _close_litellm_clients() -> AsyncIterator[None]:
    """litellm caches an HTTP client per event loop; each test's loop closes its own."""
    yield
    await close_litellm_async_clients()


def request(mock_url: str, flow: str, key: str, *, stream: bool) -> dict[str, Any]:
    return {
        "model": "openai/lfm2",
        "api_base": f"{mock_url}/v1",
        "api_key": "x",
        "stream": stream,
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"},
        ],
    }


async def streamed(data: dict[str, Any]) -> str:
    async with asyncio.timeout(DEADLINE_S):
        response = await litellm.acompletion(**data)
        hook = GUARD.async_post_call_streaming_iterator_hook(KEY, response, data)
        return "".join([c.choices[0].delta.content or "" async for c in hook if c.choices])


async def whole(data: dict[str, Any]) -> str:
    async with asyncio.timeout(DEADLINE_S):
        response = await litellm.acompletion(**data)
        assert isinstance(response, ModelResponse)
        out = await GUARD.async_post_call_success_hook(data, KEY, response)
    assert isinstance(out, ModelResponse)
    return out.choices[0].message.content or ""


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", sample(ONE_REQUEST_TURNS))
async def test_each_flow_comes_out_of_the_hook_as_its_expect_block_says(
    mock_url: str, http: httpx.AsyncClient, key: str, name: str, stream: bool
):
    flow: Flow = FLOWS[name]
    data = request(mock_url, name, key, stream=stream)
    expect = flow.expect_for(data["model"])  # the guardrail's default, auto, goes by it
    assert expect is not None
    read = streamed if stream else whole
    if expect.error == "malformed":
        with pytest.raises(MalformedReplyError, match=MALFORMED_REPLY):
            await read(data)
    else:
        shown = await read(data)
        assert shown == expect.shown
        if canary := hidden_canary(flow, data["model"]):
            assert canary not in shown
    entries = await settled_journal(http, key, count=expect.requests)
    assert len(entries) == expect.requests
    if expect.recovery:
        assert_chat_recovery(entries, SYSTEM)
        assert entries[1].body.get("stream", False) == stream


async def test_a_clean_stream_comes_out_as_litellm_relays_it(mock_url: str, key: str):
    async def chunks(data: dict[str, Any], guarded: bool) -> list[str]:
        async with asyncio.timeout(DEADLINE_S):
            response: Any = await litellm.acompletion(**data)
            if guarded:
                response = GUARD.async_post_call_streaming_iterator_hook(KEY, response, data)
            return [c.model_dump_json(exclude={"id", "created"}) async for c in response]

    direct = await chunks(request(mock_url, "clean", f"{key}-a", stream=True), False)
    guarded = await chunks(request(mock_url, "clean", f"{key}-b", stream=True), True)
    assert guarded == direct
