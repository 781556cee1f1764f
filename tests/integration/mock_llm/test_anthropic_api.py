"""The mock's Messages API (`POST /v1/messages`) through the official anthropic SDK: one flow
of each outcome class (played_flows.SAMPLED; every built-in flow is read with the SDK's
models in tests/unit/mock_llm/wire/test_anthropic_wire.py), streamed
(`messages.create(stream=True)`, the `messages.stream` helper) and whole, and every fault
kind in the Messages API's shapes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import (
    Message,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStreamEvent,
    ToolUseBlock,
)

from mock_llm import MockClient
from mock_llm.flows.model import HttpFault
from mock_llm.server.answers import MAX_ERROR_MESSAGE_CHARS
from mock_llm.wire.anthropic import STOP_REASONS

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ..conftest import claude_for
from ..helpers.played_flows import FLOWS, SAMPLED

MAX_TOKENS = 1024
TOOLS: list[Any] = [{"name": "read", "input_schema": {"type": "object"}}]


def ask(flow: str, key: str) -> list[Any]:
    return [{"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"}]


@pytest.fixture
async def claude(mock_url: str) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The official client on the mock's root, with no retries of its own."""
    async with claude_for(mock_url) as client:
        yield client


def comparable(message: Message) -> Any:
    """The message without what differs between two requests (ids, which hold the journal's
    sequence number) or between the helper's parsed message and a plain one."""
    dropped = {"id", "parsed_output"}

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in dropped}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(message.model_dump(mode="json"))


def text_of(message: Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def thinking_of(message: Message) -> str:
    return "".join(block.thinking for block in message.content if block.type == "thinking")


def uses_of(message: Message) -> list[tuple[str, object]]:
    return [(block.name, block.input) for block in message.content if block.type == "tool_use"]


@dataclass
class Streamed:
    """What `messages.create(stream=True)` yielded; an error that cut it is kept."""

    events: list[RawMessageStreamEvent] = field(default_factory=list[RawMessageStreamEvent])
    error: Exception | None = None

    def deltas(self, name: str) -> str:
        return "".join(
            str(getattr(e.delta, name))
            for e in self.events
            if isinstance(e, RawContentBlockDeltaEvent) and hasattr(e.delta, name)
        )

    @property
    def text(self) -> str:
        return self.deltas("text")

    @property
    def thinking(self) -> str:
        return self.deltas("thinking")

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def uses(self) -> list[tuple[str, str, object]]:
        """Each tool use block: its id, name and input (its JSON slices joined, parsed)."""
        uses: list[tuple[str, str, object]] = []
        for start in self.events:
            if isinstance(start, RawContentBlockStartEvent) and isinstance(
                start.content_block, ToolUseBlock
            ):
                sliced = "".join(
                    e.delta.partial_json
                    for e in self.events
                    if isinstance(e, RawContentBlockDeltaEvent)
                    and e.index == start.index
                    and e.delta.type == "input_json_delta"
                )
                block = start.content_block
                uses.append((block.id, block.name, json.loads(sliced or "{}")))
        return uses

    @property
    def ending(self) -> RawMessageDeltaEvent:
        [delta] = [e for e in self.events if isinstance(e, RawMessageDeltaEvent)]
        return delta


async def streamed(claude: anthropic.AsyncAnthropic, flow: str, key: str, **extra: Any) -> Streamed:
    """Every raw event of a streamed request; an error that cut the stream is kept."""
    result = Streamed()
    async with asyncio.timeout(DEADLINE_S):
        stream = await claude.messages.create(
            model="m", max_tokens=MAX_TOKENS, messages=ask(flow, key), stream=True, **extra
        )
        try:
            async for event in stream:
                result.events.append(event)
        except (anthropic.APIError, json.JSONDecodeError) as exc:
            result.error = exc
    return result


async def whole(claude: anthropic.AsyncAnthropic, flow: str, key: str, **extra: Any) -> Message:
    return await claude.messages.create(
        model="m", max_tokens=MAX_TOKENS, messages=ask(flow, key), **extra
    )


@pytest.mark.parametrize("flow", SAMPLED)
async def test_a_flow_plays_alike_streamed_through_the_helper_and_whole(
    claude: anthropic.AsyncAnthropic, key: str, flow: str
):
    step = FLOWS[flow].steps[0]
    expected_uses = [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
    stop_reason = STOP_REASONS[step.resolved_finish_reason]

    raw = await streamed(claude, flow, f"{key}-s")
    assert raw.error is None
    assert (raw.text, raw.thinking) == (step.content, step.reasoning)
    assert (raw.types[0], raw.types[-1]) == ("message_start", "message_stop")
    assert [(name, used) for _, name, used in raw.uses()] == expected_uses
    assert all(use_id.startswith("toolu_mock") for use_id, _, _ in raw.uses())
    assert raw.ending.delta.stop_reason == stop_reason

    async with (
        asyncio.timeout(DEADLINE_S),
        claude.messages.stream(
            model="m", max_tokens=MAX_TOKENS, messages=ask(flow, f"{key}-h")
        ) as stream,
    ):
        helper = await stream.get_final_message()

    answer = await whole(claude, flow, f"{key}-w")
    assert (text_of(answer), thinking_of(answer)) == (step.content, step.reasoning)
    assert uses_of(answer) == expected_uses
    assert (answer.stop_reason, answer.model, answer.role) == (stop_reason, "m", "assistant")
    assert answer.usage.output_tokens == raw.ending.usage.output_tokens > 0
    assert comparable(helper) == comparable(answer)


async def test_a_long_stream_comes_at_its_pace_and_can_be_left(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    step = FLOWS["slow"].steps[0]
    text = ""
    async with (
        asyncio.timeout(DEADLINE_S),
        claude.messages.stream(model="m", max_tokens=MAX_TOKENS, messages=ask("slow", key)) as s,
    ):
        async for piece in s.text_stream:
            text += piece
            if len(text) > 40:
                break
    assert step.content.startswith(text)
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


# --- faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_rate_limit_is_a_rate_limit_error_with_retry_after(
    claude: anthropic.AsyncAnthropic, key: str, stream: bool
):
    with pytest.raises(anthropic.RateLimitError) as caught:
        await whole(claude, "rate-limited", key, stream=stream)
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.type == "rate_limit_error"
    again = await whole(claude, "rate-limited", key)
    assert text_of(again) == FLOWS["rate-limited"].steps[1].content


async def test_a_server_error_is_an_internal_server_error_in_anthropics_shape(
    claude: anthropic.AsyncAnthropic, key: str
):
    fault = FLOWS["error-then-ok"].steps[0].fault
    assert isinstance(fault, HttpFault)
    with pytest.raises(anthropic.InternalServerError) as caught:
        await whole(claude, "error-then-ok", key)
    assert caught.value.status_code == 503
    error = {"type": "api_error", "message": fault.message}
    assert caught.value.body == {"type": "error", "error": error}


async def test_a_529_is_an_overloaded_error(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    flow = f"overloaded-{key}"
    flows = f"flows:\n  {flow}:\n    steps:\n      - fault: {{kind: http, status: 529}}\n"
    assert (await http.post("/_mock/flows", content=flows)).status_code == 200
    with pytest.raises(anthropic.OverloadedError) as caught:
        await whole(claude, flow, key)
    assert (caught.value.status_code, caught.value.type) == (529, "overloaded_error")


async def test_an_in_band_error_event_raises_an_api_status_error_mid_stream(
    claude: anthropic.AsyncAnthropic, key: str
):
    raw = await streamed(claude, "error-event", key)
    assert isinstance(raw.error, anthropic.APIStatusError)
    assert raw.error.type == "api_error"
    assert raw.error.api_message == "The model crashed (mock fault)."
    assert raw.types[0] == "message_start"
    assert "message_stop" not in raw.types


async def test_an_in_band_error_event_raises_from_the_stream_helper(
    claude: anthropic.AsyncAnthropic, key: str
):
    with pytest.raises(anthropic.APIStatusError, match="The model crashed"):
        async with (
            asyncio.timeout(DEADLINE_S),
            claude.messages.stream(
                model="m", max_tokens=MAX_TOKENS, messages=ask("error-event", key)
            ) as stream,
        ):
            await stream.get_final_message()


async def test_an_in_band_error_in_a_whole_answer_is_a_500(
    claude: anthropic.AsyncAnthropic, key: str
):
    with pytest.raises(anthropic.InternalServerError, match="The model crashed") as caught:
        await whole(claude, "error-event", key)
    assert (caught.value.status_code, caught.value.type) == (500, "api_error")


async def test_a_cut_stream_is_a_connection_error_after_some_text(
    claude: anthropic.AsyncAnthropic, key: str
):
    raw = await streamed(claude, "drop-mid-stream", key)
    assert isinstance(raw.error, anthropic.APIConnectionError)
    assert raw.text
    assert FLOWS["drop-mid-stream"].steps[0].content.startswith(raw.text)


async def test_a_cut_whole_answer_is_a_connection_error(claude: anthropic.AsyncAnthropic, key: str):
    with pytest.raises(anthropic.APIConnectionError):
        await whole(claude, "drop-mid-stream", key)


async def test_a_clean_eof_leaves_the_helpers_message_without_a_stop_reason(
    claude: anthropic.AsyncAnthropic, key: str
):
    raw = await streamed(claude, "cut-eof", f"{key}-s")
    assert raw.error is None
    assert raw.text
    assert "message_stop" not in raw.types
    async with (
        asyncio.timeout(DEADLINE_S),
        claude.messages.stream(
            model="m", max_tokens=MAX_TOKENS, messages=ask("cut-eof", f"{key}-h")
        ) as stream,
    ):
        partial = await stream.get_final_message()
    assert partial.stop_reason is None
    assert text_of(partial) == raw.text


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_malformed_line_fails_to_decode(
    claude: anthropic.AsyncAnthropic, key: str, stream: bool
):
    if stream:
        assert isinstance(
            (await streamed(claude, "malformed-sse", key)).error, json.JSONDecodeError
        )
    else:
        with pytest.raises(json.JSONDecodeError):
            await whole(claude, "malformed-sse", key)


async def test_a_stall_pauses_then_finishes_whole(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    raw = await streamed(claude, "quick-stall", key)
    assert raw.error is None
    assert raw.text == "one two three four"
    assert raw.types[-1] == "message_stop"
    [entry] = await settled_journal(http, key)
    assert (entry.outcome, entry.fault) == ("fault", "stall 0.3s after 2 chunks")
    assert entry.chunks_sent == len(raw.events) + 1  # and the ping, which the SDK skips


# --- requests: the journal, tool rounds, refusals ---------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_the_journal_says_the_messages_api_was_used(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str, stream: bool
):
    if stream:
        sent = len((await streamed(claude, "clean", key)).events) + 1  # the ping too
    else:
        await whole(claude, "clean", key)
        sent = 0
    [entry] = await settled_journal(http, key)
    assert (entry.path, entry.api) == ("/v1/messages", "anthropic")
    assert (entry.flow, entry.outcome) == ("clean", "completed")
    assert (entry.stream, entry.status, entry.chunks_sent) == (stream, 200, sent)
    assert (entry.body["messages"], entry.body["max_tokens"]) == (ask("clean", key), 1024)


async def test_the_mock_client_reads_the_messages_apis_entries(
    claude: anthropic.AsyncAnthropic, mock_url: str, key: str
):
    await whole(claude, "clean", key)
    with MockClient(mock_url, timeout=DEADLINE_S) as mock:
        read = await asyncio.to_thread(mock.requests, key, settle_ms=0, timeout_ms=30_000)
    assert [(r.api, r.path, r.outcome) for r in read.requests] == [
        ("anthropic", "/v1/messages", "completed")
    ]


async def test_the_messages_api_also_answers_without_the_v1_prefix(
    http: httpx.AsyncClient, key: str
):
    body = {"model": "m", "max_tokens": 5, "messages": ask("clean", key)}
    reply = await http.post("/messages", json=body)
    assert reply.status_code == 200
    assert reply.json()["type"] == "message"
    assert reply.json()["content"][0]["text"] == FLOWS["clean"].steps[0].content


async def test_a_tool_round_passes_its_result_back_as_a_tool_result_block(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    question = ask("tool-then-answer", key)
    first = await claude.messages.create(
        model="m", max_tokens=MAX_TOKENS, system="Use the tools.", messages=question, tools=TOOLS
    )
    [use] = [block for block in first.content if block.type == "tool_use"]
    assert (use.name, use.input) == ("read", {"path": "/homelab/backup-notes.md"})
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "Nightly."}
    history: list[Any] = [*question, first.to_param(), {"role": "user", "content": [result]}]
    second = await claude.messages.create(
        model="m", max_tokens=MAX_TOKENS, system="Use the tools.", messages=history, tools=TOOLS
    )
    assert text_of(second) == FLOWS["tool-then-answer"].steps[1].content
    entries = await settled_journal(http, key, count=2)
    assert [e.request_in_turn for e in entries] == [1, 2]


async def test_a_previous_answer_with_its_thinking_block_can_be_sent_back(
    claude: anthropic.AsyncAnthropic, key: str
):
    first = await whole(claude, "thinking", f"{key}-1")
    assert [block.type for block in first.content] == ["thinking", "text"]
    follow_up = {"role": "user", "content": f"And restores? [[mock:clean#{key}-2]]"}
    history: list[Any] = [*ask("thinking", f"{key}-1"), first.to_param(), follow_up]
    second = await claude.messages.create(model="m", max_tokens=MAX_TOKENS, messages=history)
    assert text_of(second) == FLOWS["clean"].steps[0].content


async def test_an_extract_step_reads_the_note_then_quotes_the_tool_result(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    flow = f"ex-msg-{key}"
    flows = f"flows:\n  {flow}:\n    steps:\n      - {{extract: {{sentences: 1, read: read}}}}\n"
    assert (await http.post("/_mock/flows", content=flows)).status_code == 200
    system = (
        "Answer from the notes.\n"
        '<excerpt path="/homelab/ups.md">The UPS sits in the rack.</excerpt>'
    )
    question: list[Any] = [
        {"role": "user", "content": f"How long does the UPS hold? [[mock:{flow}#{key}]]"}
    ]
    first = await claude.messages.create(
        model="m", max_tokens=MAX_TOKENS, system=system, messages=question, tools=TOOLS
    )
    [use] = [block for block in first.content if block.type == "tool_use"]
    assert (use.name, use.input) == ("read", {"path": "/homelab/ups.md"})
    result = {
        "type": "tool_result",
        "tool_use_id": use.id,
        "content": [{"type": "text", "text": "The UPS holds the rack for 40 minutes."}],
    }
    history: list[Any] = [*question, first.to_param(), {"role": "user", "content": [result]}]
    async with (
        asyncio.timeout(DEADLINE_S),
        claude.messages.stream(
            model="m", max_tokens=MAX_TOKENS, system=system, messages=history, tools=TOOLS
        ) as stream,
    ):
        final = await stream.get_final_text()
    assert final == (
        "From the notes:\n- The UPS holds the rack for 40 minutes. (source: /homelab/ups.md)"
    )


async def test_a_bad_message_is_a_bad_request_naming_its_place_in_anthropics_shape(
    claude: anthropic.AsyncAnthropic, key: str
):
    bad: list[Any] = [{"role": "robot", "content": f"[[mock:clean#{key}]]"}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(model="m", max_tokens=MAX_TOKENS, messages=bad)
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.0.role: must be 'user' or 'assistant'; got 'robot'.",
        },
    }


async def test_an_unknown_flow_is_a_bad_request_listing_the_flows(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    with pytest.raises(anthropic.BadRequestError) as caught:
        await whole(claude, "no-such-flow", key, stream=True)
    assert caught.value.type == "invalid_request_error"
    assert "scaffold-recover" in str(caught.value.api_message)
    [entry] = await settled_journal(http, key)
    assert (entry.path, entry.outcome, entry.status) == ("/v1/messages", "rejected", 400)


def body_of(content: object, role: object = "user", **fields: object) -> bytes:
    """A Messages API body whose one message has this role and content."""
    message = {"role": role, "content": content}
    return json.dumps({"model": "m", "max_tokens": 1, "messages": [message], **fields}).encode()


HOSTILE: list[tuple[str, bytes, str]] = [
    ("not-json", b"{model: m", "not valid JSON"),
    ("not-an-object", b'["model", "m"]', "must be a JSON object"),
    ("deep", b'{"model": "m", "messages": ' + b"[" * 200 + b"]" * 200 + b"}", "nests deeper"),
    ("no-max-tokens", body_of("x", max_tokens=None), "max_tokens: "),
    ("huge-number", b'{"model": "m", "max_tokens": ' + b"7" * 5000 + b"}", "not valid JSON"),
    ("content-a-number", body_of(7), "messages.0.content: "),
    ("huge-role", body_of("x", role="r" * 200_000), "messages.0.role: "),
    ("huge-flow-name", body_of("[[mock:" + "f" * 200_000 + "]]"), "Unknown mock flow"),
    ("lone-surrogate-role", body_of("x", role="\ud800"), "messages.0.role: "),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "says"), [(r, s) for _, r, s in HOSTILE], ids=[c for c, _, _ in HOSTILE]
)
async def test_a_hostile_body_is_a_short_400_in_anthropics_shape(
    http: httpx.AsyncClient, raw: bytes, says: str
):
    reply = await http.post(
        "/v1/messages", content=raw, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 400
    body = reply.json()
    assert (body["type"], body["error"]["type"]) == ("error", "invalid_request_error")
    assert says in body["error"]["message"]
    assert len(body["error"]["message"]) <= MAX_ERROR_MESSAGE_CHARS


async def test_a_body_over_the_size_limit_is_a_413_request_too_large(http: httpx.AsyncClient):
    raw = json.dumps({"model": "m", "max_tokens": 1, "pad": "x" * (9 * 1024 * 1024)}).encode()
    reply = await http.post("/v1/messages", content=raw)
    assert reply.status_code == 413
    assert reply.json()["error"]["type"] == "request_too_large"
