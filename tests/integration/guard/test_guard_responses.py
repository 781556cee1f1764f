"""The guard proxy's Responses API route in front of the mock, with the official openai SDK
as the client: `responses.create(stream=True)`, the `responses.stream()` helper with
`get_final_response()`, and a whole `responses.create`.

One built-in flow of each outcome class (played_flows.SAMPLED; every flow is replayed
through the route's guard in tests/unit/guard/test_guard_responses.py) is one turn through
the proxy: a flow with an `expect` block and no tool call in that step gets exactly what the
block says (the text shown, the recovery: two upstream requests, the malformed-reply error,
the stripped count in the proxy's log line); a tool-call flow shows its round's filtered
text and its calls as they came. Clean streams go out byte for byte; faults pass through."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import openai
import pytest

from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY
from mock_llm.flows.model import Chunking, Step
from mock_llm.wire import openai as openai_wire
from mock_llm.wire.responses import response as mock_response
from mock_llm.wire.responses import stream_events
from servekit.json_codec import dumps
from servekit.sse import SseDecoder

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.ports import refusing_port
from ...support.servers import (
    LAST_CHUNK,
    chunked_answer,
    scripted_upstream,
    serve_guard,
    whole_answer,
)
from ...support.sse import lines_to_first_comment
from ..conftest import GUARD_WAYS, guard_url, sdk_for
from ..helpers.pass_through import assert_passed_on_as_is
from ..helpers.played_flows import FLOWS, SAMPLED, assert_guarded_turn, shown_for
from ..helpers.recovery import (
    MARKUP,
    RECOVERY_CUT,
    RECOVERY_FAULTS,
    RECOVERY_REFUSED,
    SYSTEM,
    add_flows,
)
from ..mock_llm.test_responses_api import NO_FINAL_RESPONSE, ask, calls_of, reasoning_of, streamed

CLEAN_TEXT = "Backups run nightly at 02:00 with restic to the NAS."
IDS = re.compile(rb'"(?:id|item_id|call_id)":"[^"]*"|"created_at":\d+')


@pytest.fixture(scope="module")
def proxy_url(mock_url: str) -> Iterator[str]:
    add_flows(mock_url, RECOVERY_FAULTS)
    with serve_guard(mock_url) as url:
        yield url


@pytest.fixture(params=GUARD_WAYS)
async def sdk(request: pytest.FixtureRequest, mock_url: str) -> AsyncIterator[openai.AsyncOpenAI]:
    url, guarded = guard_url(request, mock_url)
    async with sdk_for(url, guarded=guarded) as client:
        yield client


# --- the contract, flow by flow ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["stream", "helper", "whole"])
@pytest.mark.parametrize("name", SAMPLED)
async def test_each_flow_reaches_the_client_as_its_expect_block_says(
    sdk: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
    name: str,
    mode: str,
):
    caplog.set_level(logging.INFO, logger="guard")
    step = FLOWS[name].steps[0]
    expected = shown_for(name)
    cut_short = step.resolved_finish_reason == "length"
    got: list[str] = []  # everything the client received, as JSON
    if mode == "stream":
        raw = await streamed(sdk, name, key, instructions=SYSTEM)
        got += [e.model_dump_json() for e in raw.events]
        assert raw.error is None
        assert [e.sequence_number for e in raw.events] == list(range(len(raw.events)))
        assert raw.types.count("response.created") == 1
        if expected is None:
            error, failed = raw.events[-2:]
            assert (error.type, failed.type) == ("error", "response.failed")
            assert (error.message, error.code) == (MALFORMED_REPLY, "malformed_reply")  # type: ignore[union-attr]
        else:
            assert raw.text == expected
            assert raw.reasoning == step.reasoning
            assert raw.types[-1] == ("response.incomplete" if cut_short else "response.completed")
    elif mode == "helper":
        async with (
            asyncio.timeout(DEADLINE_S),
            sdk.responses.stream(model="m", input=ask(name, key), instructions=SYSTEM) as stream,
        ):
            events = [event async for event in stream]
            got += [e.model_dump_json(warnings=False) for e in events]
            if expected is None or cut_short:
                with pytest.raises(RuntimeError, match=NO_FINAL_RESPONSE):
                    await stream.get_final_response()
            else:
                final = await stream.get_final_response()
                assert final.output_text == expected
                assert reasoning_of(final) == step.reasoning
                assert calls_of(final) == [(c.name, c.arguments) for c in step.tool_calls]
                streamed_text = "".join(
                    e.delta for e in events if e.type == "response.output_text.delta"
                )
                assert streamed_text == expected
    elif expected is None:
        with pytest.raises(openai.InternalServerError, match=MALFORMED_REPLY) as caught:
            await sdk.responses.create(model="m", input=ask(name, key), instructions=SYSTEM)
        assert caught.value.status_code == 502
    else:
        whole = await sdk.responses.create(model="m", input=ask(name, key), instructions=SYSTEM)
        got.append(whole.model_dump_json())
        assert whole.output_text == expected
        assert reasoning_of(whole) == step.reasoning
        assert calls_of(whole) == [(c.name, c.arguments) for c in step.tool_calls]
    entries = await assert_guarded_turn(http, key, caplog, name, "responses", got)
    if len(entries) == 2:
        recovery = entries[1].body
        assert "tools" not in recovery
        assert recovery["instructions"] == f"{SYSTEM}\n\n{CORRECTION_INSTRUCTION}"
        assert recovery["input"] == entries[0].body["input"]


async def test_a_recovered_stream_is_one_response_with_one_message(proxy_url: str, key: str):
    body = {"model": "m", "stream": True, "input": ask("scaffold-split", key)}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{proxy_url}/v1/responses", json=body)
    decoder = SseDecoder()
    events = [json.loads(e.data) for e in decoder.feed(reply.content) + decoder.finish()]
    kinds = [event["type"] for event in events]
    assert kinds.count("response.created") == kinds.count("response.completed") == 1
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    lifecycle = {e["response"]["id"] for e in events if "response" in e}
    assert len(lifecycle) == 1
    added = [e for e in events if e["type"] == "response.output_item.added"]
    assert [e["item"]["type"] for e in added] == ["message"]  # the empty one never showed
    [message] = events[-1]["response"]["output"]
    expect = FLOWS["scaffold-split"].expect
    assert expect is not None
    assert (
        message["content"][0]["text"]
        == expect.shown
        == "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    )


async def test_the_correction_goes_into_the_inputs_system_message_when_there_are_no_instructions(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    items: list[Any] = [
        {"role": "developer", "content": SYSTEM},
        {"role": "user", "content": ask("scaffold-recover", key)},
    ]
    tools: list[Any] = [{"type": "function", "name": "read", "parameters": {"type": "object"}}]
    whole = await sdk.responses.create(model="m", input=items, tools=tools)
    expect = FLOWS["scaffold-recover"].expect
    assert expect is not None
    assert whole.output_text == expect.shown
    first, recovery = await settled_journal(http, key, count=2)
    assert "instructions" not in recovery.body
    assert "tools" not in recovery.body
    assert recovery.body["input"] == [
        {"role": "developer", "content": f"{SYSTEM}\n\n{CORRECTION_INSTRUCTION}"},
        first.body["input"][1],
    ]


# --- byte for byte ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(
    "name", ["clean", "thinking", "thinking-scaffold", "tool-then-answer", "multi-tool"]
)
async def test_what_the_guardrail_leaves_alone_goes_out_byte_for_byte(
    proxy_url: str, mock_url: str, key: str, name: str, stream: bool
):
    def body(turn: str) -> dict[str, Any]:
        return {"model": "m", "stream": stream, "input": ask(name, turn)}

    await assert_passed_on_as_is((mock_url, proxy_url), "/v1/responses", body, key, IDS)


# --- faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_rate_limit_passes_through_with_its_retry_after(
    sdk: openai.AsyncOpenAI, key: str, stream: bool
):
    with pytest.raises(openai.RateLimitError) as caught:
        await sdk.responses.create(model="m", input=ask("rate-limited", key), stream=stream)
    assert caught.value.response.headers["retry-after"] == "1"


async def test_a_server_error_passes_through(sdk: openai.AsyncOpenAI, key: str):
    with pytest.raises(openai.InternalServerError) as caught:
        await sdk.responses.create(model="m", input=ask("error-then-ok", key), stream=True)
    assert caught.value.status_code == 503


@pytest.mark.parametrize(
    "name", ["error-event", "malformed-sse", "cut-eof"], ids=["in-band", "not-json", "eof"]
)
async def test_an_upstream_stream_fault_reaches_the_client_as_it_reaches_it_directly(
    proxy_url: str, mock_url: str, key: str, name: str
):
    def body(turn: str) -> dict[str, Any]:
        return {"model": "m", "stream": True, "input": ask(name, turn)}

    await assert_passed_on_as_is((mock_url, proxy_url), "/v1/responses", body, key, IDS)


async def test_a_stream_cut_by_the_upstream_ends_with_the_error_event_and_failed(
    sdk: openai.AsyncOpenAI, key: str
):
    raw_events = await streamed(sdk, "drop-mid-stream", key)
    assert raw_events.error is None
    error, failed = raw_events.events[-2:]
    assert error.type == "error"
    assert error.message == "The model's reply was cut off."
    assert failed.type == "response.failed"
    assert FLOWS["drop-mid-stream"].steps[0].content.startswith(raw_events.text)
    with pytest.raises(openai.APIError, match="cut off"):
        await sdk.responses.create(model="m", input=ask("drop-mid-stream", f"{key}-w"))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_refuses_passes_its_error_on(
    sdk: openai.AsyncOpenAI, key: str, stream: bool
):
    if stream:
        raw_events = await streamed(sdk, RECOVERY_REFUSED, key)
        error, failed = raw_events.events[-2:]
        assert (error.type, error.code) == ("error", "upstream_503")  # type: ignore[union-attr]
        assert failed.type == "response.failed"
        assert [e.sequence_number for e in raw_events.events] == list(range(len(raw_events.events)))
    else:
        with pytest.raises(openai.InternalServerError) as caught:
            await sdk.responses.create(model="m", input=ask(RECOVERY_REFUSED, key))
        assert caught.value.status_code == 503


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_cuts_is_an_error_for_the_client(
    sdk: openai.AsyncOpenAI, key: str, stream: bool
):
    if stream:
        raw_events = await streamed(sdk, RECOVERY_CUT, key)
        assert raw_events.types[-2:] == ["error", "response.failed"]
        assert raw_events.events[-2].message == "The model's reply was cut off."  # type: ignore[union-attr]
        assert raw_events.types.count("response.created") == 1
    else:
        with pytest.raises(openai.APIError, match="cut off"):
            await sdk.responses.create(model="m", input=ask(RECOVERY_CUT, key))


async def test_a_client_that_leaves_closes_the_upstream_stream(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    text = ""
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.responses.create(model="m", input=ask("slow", key), stream=True)
        async for event in stream:
            if event.type == "response.output_text.delta":
                text += event.delta
                if len(text) > 40:
                    break  # a 12 s answer, left after its first words
        await stream.close()
    assert FLOWS["slow"].steps[0].content.startswith(text)
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


async def test_a_silent_upstream_gets_the_client_keep_alive_comments(
    mock_url: str, http: httpx.AsyncClient, key: str
):
    body = {"model": "m", "stream": True, "input": ask("stall", key)}
    with serve_guard(mock_url, keepalive_s=0.05) as url:
        seen = await lines_to_first_comment(f"{url}/v1/responses", body)
    assert seen[-1] == ": keep-alive"  # the model went silent after its opening events
    assert "event: response.created" in seen
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


# --- everything else --------------------------------------------------------------------------


async def test_the_responses_api_is_guarded_without_the_v1_prefix_and_other_paths_pass(
    proxy_url: str, mock_url: str, key: str
):
    body = {"model": "m", "input": ask("scaffold-mixed", key)}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{proxy_url}/responses", json=body)
        retrieve = await client.get(f"{proxy_url}/v1/responses/resp_x")
        retrieve_direct = await client.get(f"{mock_url}/v1/responses/resp_x")
    expect = FLOWS["scaffold-mixed"].expect
    assert expect is not None
    assert reply.json()["output"][0]["content"][0]["text"] == expect.shown
    assert (retrieve.status_code, retrieve.content) == (
        retrieve_direct.status_code,
        retrieve_direct.content,
    )


async def test_an_unreachable_upstream_is_a_502_that_says_so():
    with refusing_port() as port, serve_guard(f"http://127.0.0.1:{port}") as url:
        async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
            reply = await client.post(f"{url}/v1/responses", json={"model": "m", "input": "x"})
    assert reply.status_code == 502
    assert reply.json()["error"]["message"] == "The model server could not be reached."


# --- an upstream that breaks where the mock cannot ------------------------------------------

META = openai_wire.CompletionMeta(id="chatcmpl-scripted1", created=1_700_000_000, model="m")
ASKED: list[dict[str, Any]] = [{"role": "user", "content": "When do backups run?"}]


def sse_answer(step: Step, *, frames: slice = slice(None), end: bytes = LAST_CHUNK) -> bytes:
    """A streamed answer as the mock would send it (its events `frames`), chunked, ending
    with `end` (the last chunk, or nothing: the connection then closes mid-body)."""
    events = [data for _, data in stream_events(step, META, ASKED)][frames]
    return chunked_answer(b"".join(events), end=end)


@contextmanager
def proxy_for(upstream: str) -> Generator[str]:
    with serve_guard(upstream) as url:
        yield url


async def post(url: str, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        return await client.post(f"{url}/v1/responses", json=body)


def events_of(reply: httpx.Response) -> list[dict[str, Any]]:
    decoder = SseDecoder()
    return [json.loads(e.data) for e in decoder.feed(reply.content) + decoder.finish()]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_cannot_be_reached_for_is_an_error_for_the_client(
    stream: bool,
):
    markup = Step(content=MARKUP)
    first = (
        sse_answer(markup) if stream else whole_answer(dumps(mock_response(markup, META, ASKED)))
    )
    with scripted_upstream([first, None]) as upstream, proxy_for(upstream) as url:
        reply = await post(url, {"model": "m", "input": "Q", "stream": stream})
    if stream:
        events = events_of(reply)
        assert [e["type"] for e in events] == [
            "response.created",
            "response.in_progress",
            "error",
            "response.failed",
        ]
        assert events[2]["message"] == "The model's reply was cut off."
    else:
        assert reply.status_code == 502
        assert reply.json()["error"]["message"] == "The model server could not be reached."


async def test_a_stream_broken_after_its_completion_reaches_the_client_whole():
    answer = sse_answer(Step(content=CLEAN_TEXT), end=b"")  # no last chunk: a broken body
    with scripted_upstream([answer]) as upstream, proxy_for(upstream) as url:
        reply = await post(url, {"model": "m", "input": "Q", "stream": True})
    events = events_of(reply)
    assert events[-1]["type"] == "response.completed"
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == (
        CLEAN_TEXT
    )


async def test_a_stream_that_ends_mid_answer_gets_what_the_filter_held():
    text = "The log reads <|tool_call_st"
    step = Step(content=text, chunking=Chunking("size", 4))
    answer = sse_answer(step, frames=slice(None, -4))  # to the last delta: no done, no end
    with scripted_upstream([answer]) as upstream, proxy_for(upstream) as url:
        reply = await post(url, {"model": "m", "input": "Q", "stream": True})
    events = events_of(reply)
    assert events[-1]["type"] == "response.output_text.delta"
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == text


@pytest.mark.parametrize("recovery", [False, True], ids=["first", "recovery"])
async def test_a_whole_answer_that_is_not_json_is_passed_on_as_it_came(recovery: bool):
    markup = whole_answer(dumps(mock_response(Step(content=MARKUP), META, ASKED)))
    junk = whole_answer(b"not json", "text/plain")
    answers = [markup, junk] if recovery else [junk]
    with scripted_upstream(answers) as upstream, proxy_for(upstream) as url:
        reply = await post(url, {"model": "m", "input": "Q"})
    assert (reply.status_code, reply.content) == (200, b"not json")
