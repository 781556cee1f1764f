"""The mock's Responses API (`POST /v1/responses`) through the official openai SDK: one flow
of each outcome class (played_flows.SAMPLED; every built-in flow is read with the SDK's
models in tests/unit/mock_llm/wire/test_responses_wire.py), streamed
(`responses.create(stream=True)`, the `responses.stream` helper) and whole, and every fault
kind in the Responses API's shapes."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ..helpers.played_flows import FLOWS, SAMPLED

NO_FINAL_RESPONSE = r"Didn't receive a `response\.completed` event"
"""What the SDK's stream helper raises when a stream ends without `response.completed`."""


def ask(flow: str, key: str) -> str:
    return f"When do backups run? [[mock:{flow}#{key}]]"


def reasoning_of(response: Response) -> str:
    return "".join(
        part.text
        for item in response.output
        if item.type == "reasoning"
        for part in item.content or []
    )


def calls_of(response: Response) -> list[tuple[str, str]]:
    return [(item.name, item.arguments) for item in response.output if item.type == "function_call"]


def comparable(response: Response) -> Any:
    """The response without what differs between two requests (ids, which hold the journal's
    sequence number) or between the SDK's parsed and plain models (`parsed...`)."""
    dropped = {"id", "call_id", "created_at", "parsed", "parsed_arguments"}

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in dropped}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(response.model_dump(mode="json"))


@dataclass
class Streamed:
    """What `responses.create(stream=True)` yielded, and what a reader builds from it."""

    events: list[ResponseStreamEvent] = field(default_factory=list[ResponseStreamEvent])
    error: Exception | None = None

    def deltas(self, kind: str) -> str:
        return "".join(e.delta for e in self.events if e.type == kind)  # type: ignore[union-attr]

    @property
    def text(self) -> str:
        return self.deltas("response.output_text.delta")

    @property
    def reasoning(self) -> str:
        return self.deltas("response.reasoning_text.delta")

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


async def streamed(sdk: openai.AsyncOpenAI, flow: str, key: str, **extra: Any) -> Streamed:
    """Every event of a streamed request; an error that cut the stream is kept, not raised."""
    result = Streamed()
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.responses.create(model="m", input=ask(flow, key), stream=True, **extra)
        try:
            async for event in stream:
                result.events.append(event)
        except (openai.APIError, httpx.HTTPError, json.JSONDecodeError) as exc:
            result.error = exc
    return result


@pytest.mark.parametrize("flow", SAMPLED)
async def test_a_flow_plays_alike_streamed_through_the_helper_and_whole(
    sdk: openai.AsyncOpenAI, key: str, flow: str
):
    step = FLOWS[flow].steps[0]
    expected_calls = [(c.name, c.arguments) for c in step.tool_calls]
    cut_short = step.resolved_finish_reason == "length"

    raw = await streamed(sdk, flow, f"{key}-s")
    assert raw.error is None
    assert (raw.text, raw.reasoning) == (step.content, step.reasoning)
    assert [e.sequence_number for e in raw.events] == list(range(len(raw.events)))
    assert raw.types[:2] == ["response.created", "response.in_progress"]
    last = raw.events[-1]
    assert last.type == ("response.incomplete" if cut_short else "response.completed")
    added = [e.item for e in raw.events if e.type == "response.output_item.added"]
    done = [e.item for e in raw.events if e.type == "response.output_item.done"]
    assert [(i.type, i.id) for i in added] == [(i.type, i.id) for i in done]
    calls = [i for i in done if i.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == expected_calls
    announced = [i for i in added if i.type == "function_call"]
    assert [c.call_id for c in calls] == [c.call_id for c in announced]
    assert all(c.call_id.startswith("call_mock") for c in calls)
    arguments = [
        "".join(
            e.delta
            for e in raw.events
            if e.type == "response.function_call_arguments.delta" and e.item_id == call.id
        )
        for call in calls
    ]
    assert arguments == [args for _, args in expected_calls]

    async with (
        asyncio.timeout(DEADLINE_S),
        sdk.responses.stream(model="m", input=ask(flow, f"{key}-h")) as stream,
    ):
        helper_events = [event async for event in stream]
        if cut_short:  # the SDK's helper only finishes on response.completed, as on the API
            with pytest.raises(RuntimeError, match=NO_FINAL_RESPONSE):
                await stream.get_final_response()
            helper_final = None
        else:
            helper_final = await stream.get_final_response()
    assert [e.type for e in helper_events] == raw.types

    whole = await sdk.responses.create(model="m", input=ask(flow, f"{key}-w"))
    assert whole.output_text == step.content
    assert reasoning_of(whole) == step.reasoning
    assert calls_of(whole) == expected_calls
    assert (whole.status, whole.model) == ("incomplete" if cut_short else "completed", "m")
    if cut_short:
        assert whole.incomplete_details is not None
        assert whole.incomplete_details.reason == "max_output_tokens"
    assert whole.usage is not None
    assert whole.usage.total_tokens == whole.usage.input_tokens + whole.usage.output_tokens > 0
    assert comparable(last.response) == comparable(whole)  # type: ignore[union-attr]
    if helper_final is not None:
        assert helper_final.output_text == step.content
        assert comparable(helper_final) == comparable(whole)


def test_the_sampled_flows_cover_text_thinking_tool_calls_and_length():
    steps = [FLOWS[name].steps[0] for name in SAMPLED]
    assert any(s.content and not s.reasoning and not s.tool_calls for s in steps)
    assert any(s.reasoning for s in steps)
    assert any(len(s.tool_calls) > 1 for s in steps)
    assert any(s.tool_calls and s.content for s in steps)
    assert any(s.resolved_finish_reason == "length" for s in steps)


async def test_a_long_stream_comes_at_its_pace_and_can_be_left(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    step = FLOWS["slow"].steps[0]
    text = ""
    async with asyncio.timeout(DEADLINE_S):
        stream = await sdk.responses.create(model="m", input=ask("slow", key), stream=True)
        async for event in stream:
            if event.type == "response.output_text.delta":
                text += event.delta
                if len(text) > 40:
                    break
        await stream.close()
    assert step.content.startswith(text)
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


# --- faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_rate_limit_is_a_rate_limit_error_with_retry_after(
    sdk: openai.AsyncOpenAI, key: str, stream: bool
):
    with pytest.raises(openai.RateLimitError) as caught:
        await sdk.responses.create(model="m", input=ask("rate-limited", key), stream=stream)
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.type == "rate_limit_exceeded"
    again = await sdk.responses.create(model="m", input=ask("rate-limited", key))
    assert again.output_text == FLOWS["rate-limited"].steps[1].content


async def test_a_server_error_is_an_internal_server_error(sdk: openai.AsyncOpenAI, key: str):
    with pytest.raises(openai.InternalServerError) as caught:
        await sdk.responses.create(model="m", input=ask("error-then-ok", key))
    assert caught.value.status_code == 503


async def test_an_in_band_error_is_an_error_event_then_response_failed(
    sdk: openai.AsyncOpenAI, key: str
):
    fault_message = "The model crashed (mock fault)."
    raw = await streamed(sdk, "error-event", f"{key}-s")
    assert raw.error is None
    assert raw.types[-2:] == ["error", "response.failed"]
    error, failed = raw.events[-2], raw.events[-1]
    assert error.type == "error"
    assert (error.message, error.code) == (fault_message, "server_error")
    assert failed.type == "response.failed"
    assert failed.response.status == "failed"
    assert failed.response.error is not None
    assert failed.response.error.message == fault_message
    assert failed.response.id == raw.events[0].response.id  # type: ignore[union-attr]

    async with (
        asyncio.timeout(DEADLINE_S),
        sdk.responses.stream(model="m", input=ask("error-event", f"{key}-h")) as stream,
    ):
        with pytest.raises(RuntimeError, match=NO_FINAL_RESPONSE):
            await stream.get_final_response()

    with pytest.raises(openai.InternalServerError, match="The model crashed") as caught:
        await sdk.responses.create(model="m", input=ask("error-event", f"{key}-w"))
    assert caught.value.status_code == 500


async def test_a_cut_stream_is_a_broken_read_after_some_text(sdk: openai.AsyncOpenAI, key: str):
    raw = await streamed(sdk, "drop-mid-stream", key)
    assert isinstance(raw.error, (openai.APIConnectionError, httpx.RemoteProtocolError))
    assert raw.text
    assert FLOWS["drop-mid-stream"].steps[0].content.startswith(raw.text)
    with pytest.raises(openai.APIConnectionError):
        await sdk.responses.create(model="m", input=ask("drop-mid-stream", f"{key}-w"))


async def test_a_clean_eof_leaves_the_helper_without_a_final_response(
    sdk: openai.AsyncOpenAI, key: str
):
    raw = await streamed(sdk, "cut-eof", key)
    assert raw.error is None
    assert raw.text
    assert "response.completed" not in raw.types
    async with (
        asyncio.timeout(DEADLINE_S),
        sdk.responses.stream(model="m", input=ask("cut-eof", f"{key}-h")) as stream,
    ):
        with pytest.raises(RuntimeError, match=NO_FINAL_RESPONSE):
            await stream.get_final_response()


async def test_a_malformed_line_fails_to_decode(sdk: openai.AsyncOpenAI, key: str):
    raw = await streamed(sdk, "malformed-sse", key)
    assert isinstance(raw.error, json.JSONDecodeError)
    with pytest.raises(json.JSONDecodeError):
        await sdk.responses.create(model="m", input=ask("malformed-sse", f"{key}-w"))


async def test_a_stall_pauses_then_finishes_whole(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    raw = await streamed(sdk, "quick-stall", key)
    assert raw.error is None
    assert raw.text == "one two three four"
    assert raw.types[-1] == "response.completed"
    [entry] = await settled_journal(http, key)
    assert (entry.outcome, entry.chunks_sent) == ("fault", len(raw.events))
    assert entry.fault == "stall 0.3s after 2 chunks"
    assert entry.ended_ms is not None
    assert entry.first_chunk_ms is not None
    assert entry.ended_ms - entry.first_chunk_ms >= 300 - 1  # less clock rounding


# --- requests: the journal, input items, refusals ---------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_the_journal_says_the_responses_api_was_used(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str, stream: bool
):
    if stream:
        sent = len((await streamed(sdk, "clean", key)).events)
    else:
        await sdk.responses.create(model="m", input=ask("clean", key))
        sent = 0
    [entry] = await settled_journal(http, key)
    assert (entry.path, entry.api) == ("/v1/responses", "responses")
    assert (entry.flow, entry.outcome) == ("clean", "completed")
    assert (entry.stream, entry.status, entry.chunks_sent) == (stream, 200, sent)
    assert entry.body["input"] == ask("clean", key)


async def test_the_responses_api_also_answers_without_the_v1_prefix(
    http: httpx.AsyncClient, key: str
):
    reply = await http.post("/responses", json={"model": "m", "input": ask("clean", key)})
    assert reply.status_code == 200
    assert reply.json()["object"] == "response"
    assert reply.json()["output"][0]["content"][0]["text"] == FLOWS["clean"].steps[0].content


async def test_a_tool_round_passes_its_output_back_as_input_items(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    tools: list[Any] = [{"type": "function", "name": "read", "parameters": {"type": "object"}}]
    question: list[Any] = [{"role": "user", "content": ask("tool-then-answer", key)}]
    first = await sdk.responses.create(model="m", instructions="Use the tools.", input=question)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("read", {"path": "/homelab/backup-notes.md"})
    result = {"type": "function_call_output", "call_id": call.call_id, "output": "Nightly."}
    history: list[Any] = [*question, *first.output, result]  # the SDK's own items, sent back
    second = await sdk.responses.create(
        model="m",
        instructions="Use the tools.",
        input=history,
        tools=tools,
    )
    assert second.output_text == FLOWS["tool-then-answer"].steps[1].content
    entries = await settled_journal(http, key, count=2)
    assert [e.request_in_turn for e in entries] == [1, 2]


async def test_an_extract_step_reads_the_note_then_quotes_the_tool_result(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    flow = f"ex-rsp-{key}"
    flows = f"flows:\n  {flow}:\n    steps:\n      - {{extract: {{sentences: 1, read: read}}}}\n"
    assert (await http.post("/_mock/flows", content=flows)).status_code == 200
    tools: list[Any] = [{"type": "function", "name": "read", "parameters": {"type": "object"}}]
    note = '<excerpt path="/homelab/ups.md">The UPS sits in the rack.</excerpt>'
    question: list[Any] = [
        {"role": "user", "content": f"How long does the UPS hold? [[mock:{flow}#{key}]]"}
    ]
    instructions = f"Answer from the notes.\n{note}"
    first = await sdk.responses.create(
        model="m", instructions=instructions, input=question, tools=tools
    )
    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("read", {"path": "/homelab/ups.md"})
    result = {
        "type": "function_call_output",
        "call_id": call.call_id,
        "output": "The UPS holds the rack for 40 minutes.",
    }
    history: list[Any] = [*question, *first.output, result]
    async with (
        asyncio.timeout(DEADLINE_S),
        sdk.responses.stream(model="m", instructions=instructions, input=history) as stream,
    ):
        final = await stream.get_final_response()
    assert final.output_text == (
        "From the notes:\n- The UPS holds the rack for 40 minutes. (source: /homelab/ups.md)"
    )


async def test_a_bad_input_item_is_a_bad_request_naming_it(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    bad: list[Any] = [{"role": "robot", "content": ask("clean", key)}]
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.responses.create(model="m", input=bad)
    assert caught.value.param == "input[0].role"
    assert "got 'robot'" in caught.value.message


async def test_an_unknown_flow_is_a_bad_request_naming_the_input(
    sdk: openai.AsyncOpenAI, http: httpx.AsyncClient, key: str
):
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk.responses.create(model="m", input=ask("no-such-flow", key), stream=True)
    assert (caught.value.code, caught.value.param) == ("unknown_flow", "input")
    assert "scaffold-recover" in caught.value.message
    [entry] = await settled_journal(http, key)
    assert (entry.path, entry.outcome, entry.status) == ("/v1/responses", "rejected", 400)
