"""The guard proxy's Messages API route in front of the mock, with the official anthropic SDK
as the client: `messages.create(stream=True)`, the `messages.stream()` helper with
`get_final_message()`, and a whole `messages.create`.

One built-in flow of each outcome class (played_flows.SAMPLED; every flow is replayed
through the route's guard in tests/unit/guard/test_guard_messages.py) is one turn through
the proxy: a flow with an `expect` block and no tool call in that step gets exactly what the
block says (the text shown, the recovery: two upstream requests, the second with the
correction in `system` and no tools; the malformed-reply error, which the SDK raises; the
stripped count in the proxy's log line); a tool-call flow shows its round's filtered text
and its tool uses as they came. Clean streams go out byte for byte; faults pass through or
end in Anthropic's error event."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import httpx
import pytest

from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY
from mock_llm.flows.model import Step
from mock_llm.wire import openai as openai_wire
from mock_llm.wire.anthropic import stream_events
from servekit.json_codec import parse_object
from servekit.sse import SseDecoder

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.ports import refusing_port
from ...support.servers import chunked_answer, scripted_upstream, serve_guard
from ...support.sse import lines_until
from ..conftest import GUARD_WAYS, claude_for, guard_url
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
from ..mock_llm.test_anthropic_api import (
    MAX_TOKENS,
    TOOLS,
    ask,
    streamed,
    text_of,
    thinking_of,
    uses_of,
)

IDS = re.compile(rb'"id":"[^"]*"')
MALFORMED = re.escape(MALFORMED_REPLY)
CUT_OFF = re.escape("The model's reply was cut off.")


@pytest.fixture(scope="module")
def proxy_url(mock_url: str) -> Iterator[str]:
    add_flows(mock_url, RECOVERY_FAULTS)
    with serve_guard(mock_url) as url:
        yield url


@pytest.fixture(params=GUARD_WAYS)
async def claude(
    request: pytest.FixtureRequest, mock_url: str
) -> AsyncIterator[anthropic.AsyncAnthropic]:
    url, guarded = guard_url(request, mock_url)
    async with claude_for(url, guarded=guarded) as client:
        yield client


def create(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": MAX_TOKENS, **extra}


# --- the contract, flow by flow ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["stream", "helper", "whole"])
@pytest.mark.parametrize("name", SAMPLED)
async def test_each_flow_reaches_the_client_as_its_expect_block_says(
    claude: anthropic.AsyncAnthropic,
    http: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
    name: str,
    mode: str,
):
    caplog.set_level(logging.INFO, logger="guard")
    step = FLOWS[name].steps[0]
    expected = shown_for(name)
    uses = [call.name for call in step.tool_calls]
    got: list[str] = []  # everything the client received, as JSON
    if mode == "stream":
        raw = await streamed(claude, name, key, system=SYSTEM)
        got += [e.model_dump_json() for e in raw.events]
        assert raw.types.count("message_start") == 1
        if expected is None:
            assert isinstance(raw.error, anthropic.APIStatusError)
            assert MALFORMED_REPLY in str(raw.error)
        else:
            assert raw.error is None
            assert (raw.text, raw.thinking) == (expected, step.reasoning)
            assert [use_name for _, use_name, _ in raw.uses()] == uses
            assert raw.types[-1] == "message_stop"
    elif mode == "helper":
        async with (
            asyncio.timeout(DEADLINE_S),
            claude.messages.stream(**create(messages=ask(name, key), system=SYSTEM)) as stream,
        ):
            if expected is None:
                with pytest.raises(anthropic.APIStatusError, match=MALFORMED):
                    await stream.get_final_message()
            else:
                final = await stream.get_final_message()
                got.append(final.model_dump_json())
                assert (text_of(final), thinking_of(final)) == (expected, step.reasoning)
                assert [use_name for use_name, _ in uses_of(final)] == uses
                assert all(block.type != "text" or block.text for block in final.content)
    elif expected is None:
        with pytest.raises(anthropic.InternalServerError, match=MALFORMED) as caught:
            await claude.messages.create(**create(messages=ask(name, key), system=SYSTEM))
        assert caught.value.status_code == 502
    else:
        answer = await claude.messages.create(**create(messages=ask(name, key), system=SYSTEM))
        got.append(answer.model_dump_json())
        assert (text_of(answer), thinking_of(answer)) == (expected, step.reasoning)
        assert [use_name for use_name, _ in uses_of(answer)] == uses
    entries = await assert_guarded_turn(http, key, caplog, name, "messages", got)
    if len(entries) == 2:
        recovery = entries[1].body
        assert recovery["system"] == f"{SYSTEM}\n\n{CORRECTION_INSTRUCTION}"
        assert recovery["messages"] == entries[0].body["messages"]


async def test_the_recovery_has_no_tools_and_folds_the_correction_into_system_blocks(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    system: list[Any] = [{"type": "text", "text": SYSTEM}]
    answer = await claude.messages.create(
        **create(messages=ask("scaffold-recover", key), system=system, tools=TOOLS)
    )
    expect = FLOWS["scaffold-recover"].expect
    assert expect is not None
    assert text_of(answer) == expect.shown
    first, recovery = await settled_journal(http, key, count=2)
    assert "tools" in first.body
    assert "tools" not in recovery.body
    assert recovery.body["system"] == [*system, {"type": "text", "text": CORRECTION_INSTRUCTION}]
    assert recovery.body["messages"] == first.body["messages"]


async def test_a_recovered_stream_is_one_message_whose_blocks_count_from_zero(
    proxy_url: str, key: str
):
    body = create(stream=True, messages=ask("scaffold-split", key))
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{proxy_url}/v1/messages", json=body)
    events = events_of(reply.content)
    kinds = [event["type"] for event in events]
    assert kinds.count("message_start") == kinds.count("message_stop") == 1
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [(e["index"], e["content_block"]["type"]) for e in starts] == [(0, "text")]
    expect = FLOWS["scaffold-split"].expect
    assert expect is not None
    assert "".join(e["delta"]["text"] for e in events if "delta" in e and "text" in e["delta"]) == (
        expect.shown
    )


# --- byte for byte ----------------------------------------------------------------------------


def events_of(raw: bytes) -> list[dict[str, Any]]:
    decoder = SseDecoder()
    return [parse_object(e.data) or {} for e in decoder.feed(raw) + decoder.finish()]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(
    "name", ["clean", "thinking", "thinking-scaffold", "tool-then-answer", "multi-tool"]
)
async def test_what_the_guardrail_leaves_alone_goes_out_byte_for_byte(
    proxy_url: str, mock_url: str, key: str, name: str, stream: bool
):
    def body(turn: str) -> dict[str, Any]:
        return create(stream=stream, messages=ask(name, turn))

    await assert_passed_on_as_is((mock_url, proxy_url), "/v1/messages", body, key, IDS)


# --- faults -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_rate_limit_passes_through_with_its_retry_after(
    claude: anthropic.AsyncAnthropic, key: str, stream: bool
):
    with pytest.raises(anthropic.RateLimitError) as caught:
        await claude.messages.create(**create(messages=ask("rate-limited", key), stream=stream))
    assert caught.value.response.headers["retry-after"] == "1"


async def test_a_server_error_passes_through(claude: anthropic.AsyncAnthropic, key: str):
    with pytest.raises(anthropic.InternalServerError) as caught:
        await claude.messages.create(**create(messages=ask("error-then-ok", key), stream=True))
    assert caught.value.status_code == 503


@pytest.mark.parametrize(
    "name", ["error-event", "malformed-sse", "cut-eof"], ids=["in-band", "not-json", "eof"]
)
async def test_an_upstream_stream_fault_reaches_the_client_as_it_reaches_it_directly(
    proxy_url: str, mock_url: str, key: str, name: str
):
    def body(turn: str) -> dict[str, Any]:
        return create(stream=True, messages=ask(name, turn))

    await assert_passed_on_as_is((mock_url, proxy_url), "/v1/messages", body, key, IDS)


async def test_a_stream_cut_by_the_upstream_ends_with_an_error_event_the_sdk_raises(
    claude: anthropic.AsyncAnthropic, key: str
):
    cut = await streamed(claude, "drop-mid-stream", key)
    assert isinstance(cut.error, anthropic.APIStatusError)
    assert re.search(CUT_OFF, str(cut.error))
    assert FLOWS["drop-mid-stream"].steps[0].content.startswith(cut.text)
    with pytest.raises(anthropic.InternalServerError, match=CUT_OFF):
        await claude.messages.create(**create(messages=ask("drop-mid-stream", f"{key}-w")))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_refuses_passes_its_error_on(
    claude: anthropic.AsyncAnthropic, key: str, stream: bool
):
    if stream:
        refused = await streamed(claude, RECOVERY_REFUSED, key)
        assert isinstance(refused.error, anthropic.APIStatusError)
        body: Any = refused.error.body
        assert body["error"]["type"] == "api_error"  # a 503's, as the API types it
        assert refused.types == ["message_start"]  # the empty reply never showed
    else:
        with pytest.raises(anthropic.InternalServerError) as caught:
            await claude.messages.create(**create(messages=ask(RECOVERY_REFUSED, key)))
        assert caught.value.status_code == 503


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_cuts_is_an_error_for_the_client(
    claude: anthropic.AsyncAnthropic, key: str, stream: bool
):
    if stream:
        cut = await streamed(claude, RECOVERY_CUT, key)
        assert isinstance(cut.error, anthropic.APIStatusError)
        assert re.search(CUT_OFF, str(cut.error))
        assert cut.types.count("message_start") == 1
    else:
        with pytest.raises(anthropic.APIError, match=CUT_OFF):
            await claude.messages.create(**create(messages=ask(RECOVERY_CUT, key)))


async def test_a_client_that_leaves_closes_the_upstream_stream(
    claude: anthropic.AsyncAnthropic, http: httpx.AsyncClient, key: str
):
    text = ""
    async with (
        asyncio.timeout(DEADLINE_S),
        claude.messages.stream(**create(messages=ask("slow", key))) as stream,
    ):
        async for piece in stream.text_stream:
            text += piece
            if len(text) > 40:
                break  # a 12 s answer, left after its first words
    assert FLOWS["slow"].steps[0].content.startswith(text)
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


async def test_a_silent_upstream_gets_the_client_ping_events(
    mock_url: str, http: httpx.AsyncClient, key: str
):
    body = create(stream=True, messages=ask("stall", key))

    def pinged_again(seen: list[str]) -> bool:  # the upstream's own ping, then the proxy's
        return seen.count("event: ping") == 2

    with serve_guard(mock_url, keepalive_s=0.05) as url:
        seen = await lines_until(f"{url}/v1/messages", body, pinged_again)
    assert seen[-1] == "event: ping"  # the model went silent after its opening
    assert "event: message_start" in seen
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


# --- everything else --------------------------------------------------------------------------


async def test_the_messages_api_is_guarded_without_the_v1_prefix(proxy_url: str, key: str):
    body = create(messages=ask("scaffold-mixed", key))
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{proxy_url}/messages", json=body)
    expect = FLOWS["scaffold-mixed"].expect
    assert expect is not None
    assert reply.json()["content"][0]["text"] == expect.shown


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/messages/count_tokens"),
        ("POST", "/v1/messages/batches"),
        ("GET", "/v1/messages/batches/msgbatch_1/results"),
        ("GET", "/v1/messages"),
    ],
)
async def test_the_rest_of_the_messages_api_is_passed_on_as_it_is(
    proxy_url: str, mock_url: str, method: str, path: str
):
    body = create(messages=ask("scaffold-mixed", "count")) if method == "POST" else None
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        direct = await client.request(method, f"{mock_url}{path}", json=body)
        proxied = await client.request(method, f"{proxy_url}{path}", json=body)
    assert (proxied.status_code, proxied.content) == (direct.status_code, direct.content)


@pytest.mark.parametrize("body", [b'{"model": "m"}', b"not json"], ids=["json", "not-json"])
async def test_an_unreachable_upstream_is_a_502_in_anthropics_shape(body: bytes):
    with refusing_port() as port, serve_guard(f"http://127.0.0.1:{port}") as url:
        async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
            reply = await client.post(f"{url}/v1/messages", content=body)
    assert reply.status_code == 502
    assert reply.json() == {
        "type": "error",
        "error": {"type": "api_error", "message": "The model server could not be reached."},
    }


# --- an upstream that breaks where the mock cannot ------------------------------------------

META = openai_wire.CompletionMeta(id="chatcmpl-scripted1", created=1_700_000_000, model="m")
ASKED: list[dict[str, Any]] = [{"role": "user", "content": "When do backups run?"}]


def sse_answer(step: Step, *, end: bytes | None = None) -> bytes:
    """A streamed answer as the mock would send it, chunked (`end`: what follows its one
    chunk; b"": nothing, the connection then closes mid-body)."""
    body = b"".join(data for _, data in stream_events(step, META, ASKED))
    return chunked_answer(body) if end is None else chunked_answer(body, end=end)


async def test_a_recovery_the_upstream_cannot_be_reached_for_ends_the_stream_with_the_cut():
    answers = [sse_answer(Step(content=MARKUP)), None]
    with scripted_upstream(answers) as upstream, serve_guard(upstream) as url:
        async with claude_for(url) as client, asyncio.timeout(DEADLINE_S):
            stream = await client.messages.create(**create(messages=ASKED, stream=True))
            with pytest.raises(anthropic.APIStatusError, match=CUT_OFF):
                async for _ in stream:
                    pass


async def test_a_stream_broken_after_its_message_stop_reaches_the_client_whole():
    answer = sse_answer(Step(content="Backups run nightly."), end=b"")
    with scripted_upstream([answer]) as upstream, serve_guard(upstream) as url:
        async with (
            claude_for(url) as client,
            asyncio.timeout(DEADLINE_S),
            client.messages.stream(**create(messages=ASKED)) as stream,
        ):
            final = await stream.get_final_message()
    assert text_of(final) == "Backups run nightly."
    assert final.stop_reason == "end_turn"
