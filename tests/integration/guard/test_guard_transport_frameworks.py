"""guard.transport inside the frameworks Python chat apps are built on: LangChain's
`ChatOpenAI` and Pydantic AI's OpenAI provider, the real packages from PyPI, against the mock.

Each gets the transport the one way its docs give an HTTP client (`http_async_client` /
`http_client`, `OpenAIProvider(http_client=...)`), and each flow of an outcome class whose
first answer is text reaches the framework as its `expect` block says, streamed and whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import httpx2
import openai
import pytest

from guard.transport import AsyncGuardTransport, GuardTransport
from guardrail.policy import MALFORMED_REPLY

from ...support.deadlines import DEADLINE_S
from ..helpers.played_flows import FLOWS, SAMPLED, shown_for

if TYPE_CHECKING:  # the frameworks load in the tests that use them, not at collection (2-3 s)
    from langchain_openai import ChatOpenAI
    from pydantic_ai import Agent

ANSWERING = [n for n in SAMPLED if not FLOWS[n].steps[0].tool_calls]


def question(flow: str, key: str) -> str:
    return f"When do backups run? [[mock:{flow}#{key}]]"


@pytest.fixture
async def chat(mock_url: str) -> AsyncIterator[ChatOpenAI]:
    from langchain_openai import ChatOpenAI

    async with httpx2.AsyncClient(transport=AsyncGuardTransport()) as http:
        yield ChatOpenAI(
            model="m",
            base_url=f"{mock_url}/v1",
            api_key="k",  # type: ignore[arg-type]
            max_retries=0,
            timeout=DEADLINE_S,
            http_async_client=http,
        )


@pytest.fixture
def chat_sync(mock_url: str) -> Iterator[ChatOpenAI]:
    from langchain_openai import ChatOpenAI

    with httpx2.Client(transport=GuardTransport()) as http:
        yield ChatOpenAI(
            model="m",
            base_url=f"{mock_url}/v1",
            api_key="k",  # type: ignore[arg-type]
            max_retries=0,
            timeout=DEADLINE_S,
            http_client=http,
        )


@pytest.fixture
async def agent(mock_url: str) -> AsyncIterator[Agent[None, str]]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async with httpx2.AsyncClient(transport=AsyncGuardTransport()) as http:
        provider = OpenAIProvider(base_url=f"{mock_url}/v1", api_key="k", http_client=http)
        yield Agent(OpenAIChatModel("m", provider=provider))


async def langchain_text(chat: ChatOpenAI, name: str, key: str, stream: bool) -> str:
    if stream:
        return "".join([str(part.content) async for part in chat.astream(question(name, key))])
    return str((await chat.ainvoke(question(name, key))).content)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", ANSWERING)
async def test_langchain_gets_each_flow_as_its_expect_block_says(
    chat: ChatOpenAI, key: str, name: str, stream: bool
):
    expected = shown_for(name)
    if expected is None:
        with pytest.raises(openai.APIError, match=MALFORMED_REPLY):
            await langchain_text(chat, name, key, stream)
    else:
        assert await langchain_text(chat, name, key, stream) == expected


@pytest.mark.parametrize("name", ["scaffold-recover", "scaffold-mixed"])
def test_langchain_sync_gets_the_guarded_answer(chat_sync: ChatOpenAI, key: str, name: str):
    assert str(chat_sync.invoke(question(name, key)).content) == shown_for(name)


async def agent_text(agent: Agent[None, str], name: str, key: str, stream: bool) -> str:
    if stream:
        async with agent.run_stream(question(name, key)) as run:
            return await run.get_output()
    return (await agent.run(question(name, key))).output


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", ANSWERING)
async def test_pydantic_ai_gets_each_flow_as_its_expect_block_says(
    agent: Agent[None, str], key: str, name: str, stream: bool
):
    from pydantic_ai.exceptions import ModelAPIError

    expected = shown_for(name)
    if expected is None:
        with pytest.raises(ModelAPIError, match=MALFORMED_REPLY):
            await agent_text(agent, name, key, stream)
    else:
        assert await agent_text(agent, name, key, stream) == expected
