"""The mock's Ollama API (`/api/chat`, `/api/tags`, `/api/version`) through the official
ollama client: one flow of each outcome class (played_flows.SAMPLED; every built-in flow is
read with the client's models in tests/unit/mock_llm/wire/test_ollama_wire.py), in Ollama's
wire format."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama
import pytest

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ..helpers.played_flows import FLOWS, SAMPLED


def ask(flow: str, key: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"}]


@pytest.fixture
async def client(mock_url: str) -> AsyncIterator[ollama.AsyncClient]:
    async with ollama.AsyncClient(host=mock_url, timeout=DEADLINE_S) as client:
        yield client


async def streamed(client: ollama.AsyncClient, flow: str, key: str) -> dict[str, Any]:
    text, thinking, calls = [], [], []
    last: Any = None
    async for part in await client.chat(model="m", messages=ask(flow, key), stream=True):
        text.append(part.message.content or "")
        thinking.append(part.message.thinking or "")
        calls += [
            (c.function.name, dict(c.function.arguments)) for c in part.message.tool_calls or []
        ]
        last = part
    assert last is not None
    assert last.done
    return {"text": "".join(text), "thinking": "".join(thinking), "calls": calls, "last": last}


@pytest.mark.parametrize("flow", SAMPLED)
async def test_a_flow_streams_and_answers_whole_alike(
    client: ollama.AsyncClient, key: str, flow: str
):
    step = FLOWS[flow].steps[0]
    got = await streamed(client, flow, f"{key}-s")
    whole = await client.chat(model="m", messages=ask(flow, f"{key}-w"))
    assert got["text"] == whole.message.content == step.content
    assert got["thinking"] == (whole.message.thinking or "") == step.reasoning
    expected_calls = [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
    assert got["calls"] == expected_calls
    assert [
        (c.function.name, dict(c.function.arguments)) for c in whole.message.tool_calls or []
    ] == expected_calls
    reason = "length" if step.resolved_finish_reason == "length" else "stop"
    assert got["last"].done_reason == whole.done_reason == reason
    assert got["last"].eval_count == whole.eval_count
    assert (whole.eval_count or 0) > 0


async def test_a_body_without_stream_is_streamed_as_ndjson(mock_url: str, key: str):
    body = {"model": "m", "messages": ask("clean", key)}  # Ollama streams unless told not to
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        reply = await http.post(f"{mock_url}/api/chat", json=body)
    assert reply.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in reply.text.splitlines()]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert "".join(line["message"]["content"] for line in lines) == FLOWS["clean"].steps[0].content


async def test_a_rate_limit_is_ollamas_error_with_its_status(client: ollama.AsyncClient, key: str):
    with pytest.raises(ollama.ResponseError) as caught:
        await client.chat(model="m", messages=ask("rate-limited", key), stream=False)
    assert caught.value.status_code == 429
    assert "Rate limit reached" in caught.value.error


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_an_error_event_is_ollamas_error(client: ollama.AsyncClient, key: str, stream: bool):
    async def read() -> object:
        if stream:
            return await streamed(client, "error-event", key)
        return await client.chat(model="m", messages=ask("error-event", key), stream=False)

    with pytest.raises(ollama.ResponseError, match="The model crashed"):
        await read()


async def test_a_cut_stream_is_a_broken_read(client: ollama.AsyncClient, key: str):
    with pytest.raises(httpx.RemoteProtocolError):
        await streamed(client, "drop-mid-stream", key)


async def test_a_bad_request_is_refused_in_ollamas_error_shape(mock_url: str):
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        reply = await http.post(f"{mock_url}/api/chat", json={"model": "m"})
    assert reply.status_code == 400
    assert set(reply.json()) == {"error"}
    assert "messages" in reply.json()["error"]


async def test_the_journal_says_which_api_was_used(
    client: ollama.AsyncClient, http: httpx.AsyncClient, key: str
):
    await streamed(client, "clean", key)
    [entry] = await settled_journal(http, key)
    assert (entry.path, entry.api) == ("/api/chat", "ollama")
    assert (entry.flow, entry.outcome) == ("clean", "completed")


async def test_the_model_list_and_version_parse(client: ollama.AsyncClient, mock_url: str):
    listing = await client.list()
    assert [m.model for m in listing.models] == ["mock-llm"]
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        version = (await http.get(f"{mock_url}/api/version")).json()
    assert version == {"version": "0.12.0"}
