"""The official openai SDK is the reference client: whatever it parses, the mock must send."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest

from ...support.deadlines import DEADLINE_S
from ...support.sse import user


async def test_sdk_streams_the_answer_chunk_by_chunk(sdk: openai.AsyncOpenAI, key: str):
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:clean#{key}]]"), stream=True
        )
        chunks = [chunk async for chunk in stream]
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(pieces) > 5
    assert "".join(pieces).startswith("Backups run nightly at 02:00")
    assert {c.id for c in chunks} == {chunks[0].id}
    assert [c.choices[0].delta.role for c in chunks].count("assistant") == 1
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_sdk_non_streaming_gets_the_whole_answer(sdk: openai.AsyncOpenAI, key: str):
    completion = await sdk.chat.completions.create(
        model="lfm2-test", messages=user(f"[[mock:clean#{key}]]")
    )
    assert completion.choices[0].message.content is not None
    assert completion.choices[0].message.content.startswith("Backups run nightly")
    assert completion.model == "lfm2-test"
    assert completion.usage is not None
    assert completion.usage.completion_tokens > 0


async def test_sdk_stream_helper_accumulates_a_streamed_tool_call(
    sdk: openai.AsyncOpenAI, key: str
):
    async with (
        asyncio.timeout(DEADLINE_S),
        sdk.chat.completions.stream(
            model="lfm2-test", messages=user(f"[[mock:multi-tool#{key}]]")
        ) as stream,
    ):
        events = [event.type async for event in stream]
        final = await stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("grep", {"pattern": "restic"}),
        ("list", {"path": "/homelab/"}),
    ]
    assert final.choices[0].finish_reason == "tool_calls"
    assert "tool_calls.function.arguments.delta" in events


async def test_sdk_include_usage_ends_with_a_usage_chunk(sdk: openai.AsyncOpenAI, key: str):
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.chat.completions.create(
            model="lfm2-test",
            messages=user(f"[[mock:clean#{key}]]"),
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


async def test_sdk_reads_reasoning_content_before_content(sdk: openai.AsyncOpenAI, key: str):
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:thinking-scaffold#{key}]]"), stream=True
        )
        kinds: list[str] = []
        reasoning = ""
        async for chunk in stream:
            delta = chunk.choices[0].delta
            extra = delta.model_extra or {}
            if extra.get("reasoning_content"):
                reasoning += extra["reasoning_content"]
                kinds.append("reasoning")
            if delta.content:
                kinds.append("content")
    assert "<|tool_call_start|>" in reasoning
    assert kinds.index("content") > kinds.index("reasoning")
    assert "reasoning" not in kinds[kinds.index("content") :]


async def test_sdk_rate_limit_error_carries_retry_after(sdk: openai.AsyncOpenAI, key: str):
    with pytest.raises(openai.RateLimitError) as caught:
        await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:rate-limited#{key}]]")
        )
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.type == "rate_limit_exceeded"


async def test_sdk_own_retry_honours_retry_after_then_gets_the_answer(mock_url: str, key: str):
    async with openai.AsyncOpenAI(
        base_url=f"{mock_url}/v1", api_key="k", max_retries=1, timeout=DEADLINE_S
    ) as client:
        completion = await client.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:rate-limited#{key}]]")
        )
    assert (completion.choices[0].message.content or "").startswith("Backups run nightly")


async def test_sdk_server_error_is_internal_server_error(sdk: openai.AsyncOpenAI, key: str):
    with pytest.raises(openai.InternalServerError) as caught:
        await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:error-then-ok#{key}]]")
        )
    assert caught.value.status_code == 503
    second = await sdk.chat.completions.create(
        model="lfm2-test", messages=user(f"[[mock:error-then-ok#{key}]]")
    )
    assert second.choices[0].message.content


async def test_sdk_raises_when_the_stream_is_cut(sdk: openai.AsyncOpenAI, key: str):
    received = ""
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:drop-mid-stream#{key}]]"), stream=True
        )
        with pytest.raises((openai.APIConnectionError, httpx.RemoteProtocolError)):  # noqa: PT012 -- it raises mid-iteration
            async for chunk in stream:
                received += chunk.choices[0].delta.content or ""
    assert received
    assert "Backups run nightly at 02:00 with restic".startswith(received)


async def test_sdk_raises_api_error_on_an_in_band_error_event(sdk: openai.AsyncOpenAI, key: str):
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:error-event#{key}]]"), stream=True
        )
        with pytest.raises(openai.APIError, match="The model crashed"):
            async for _ in stream:
                pass


async def test_sdk_fails_to_decode_a_malformed_line(sdk: openai.AsyncOpenAI, key: str):
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:malformed-sse#{key}]]"), stream=True
        )
        with pytest.raises(json.JSONDecodeError):
            async for _ in stream:
                pass


async def test_sdk_bad_request_names_the_unknown_flow(sdk: openai.AsyncOpenAI, key: str):
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.chat.completions.create(
            model="lfm2-test", messages=user(f"[[mock:no-such-flow#{key}]]")
        )
    assert caught.value.code == "unknown_flow"
    assert "no-such-flow" in caught.value.message
    assert "scaffold-recover" in caught.value.message


async def test_sdk_sees_length_finish_reason(sdk: openai.AsyncOpenAI, key: str):
    completion = await sdk.chat.completions.create(
        model="lfm2-test", messages=user(f"[[mock:length#{key}]]")
    )
    assert completion.choices[0].finish_reason == "length"


async def test_sdk_lists_the_mock_model(sdk: openai.AsyncOpenAI):
    models = await sdk.models.list()
    assert [m.id for m in models.data] == ["mock-llm"]
