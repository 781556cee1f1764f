"""guard.transport: the guard in-process, as an httpx transport, with the official clients.

The async transport goes through every guard route's own tests as their second way in
(`GUARD_WAYS` in the proxy's, the Responses', the Messages' and Ollama's test modules).
Here: the sync transport with each sync client (openai, anthropic, ollama) over one flow
of each outcome class, streamed and whole; the async one on plain httpx (not only httpx2);
what it passes on untouched; the one recovery through the wrapped transport; and an
upstream it cannot reach.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import weakref
from collections.abc import Iterator
from typing import Any, cast

import anthropic
import httpx
import httpx2
import ollama
import openai
import pytest

from guard.transport import AsyncGuardTransport, GuardTransport
from guardrail.policy import MALFORMED_REPLY

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.log_lines import stripped_in_log
from ...support.ports import refusing_port
from ..helpers.played_flows import FLOWS, SAMPLED, shown_for
from ..helpers.recovery import SYSTEM

ANSWERING = [n for n in SAMPLED if not FLOWS[n].steps[0].tool_calls]
"""One flow of each outcome class whose first answer is text (a tool round is the app's)."""


def ask(flow: str, key: str) -> list[Any]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"},
    ]


@pytest.fixture
def openai_sync(mock_url: str) -> Iterator[openai.OpenAI]:
    http = httpx2.Client(transport=GuardTransport())
    with openai.OpenAI(
        base_url=f"{mock_url}/v1", api_key="k", max_retries=0, timeout=DEADLINE_S, http_client=http
    ) as client:
        yield client


@pytest.fixture
def claude_sync(mock_url: str) -> Iterator[anthropic.Anthropic]:
    http = httpx2.Client(transport=GuardTransport())
    with anthropic.Anthropic(
        base_url=mock_url, api_key="k", max_retries=0, timeout=DEADLINE_S, http_client=http
    ) as client:
        yield client


@pytest.fixture
def ollama_sync(mock_url: str) -> Iterator[ollama.Client]:
    with ollama.Client(host=mock_url, timeout=DEADLINE_S, transport=GuardTransport()) as client:
        yield client


# --- sync clients, flow by flow ----------------------------------------------------------------


def chat_text(client: openai.OpenAI, name: str, key: str, stream: bool) -> str:
    if stream:
        chunks = client.chat.completions.create(model="m", messages=ask(name, key), stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    completion = client.chat.completions.create(model="m", messages=ask(name, key))
    return completion.choices[0].message.content or ""


def messages_text(client: anthropic.Anthropic, name: str, key: str, stream: bool) -> str:
    asked: Any = {"model": "m", "max_tokens": 256, "messages": ask(name, key)[1:], "system": SYSTEM}
    if stream:
        with client.messages.stream(**asked) as events:
            return "".join(events.text_stream)
    answer = client.messages.create(**asked)
    return "".join(block.text for block in answer.content if block.type == "text")


def ollama_text(client: ollama.Client, name: str, key: str, stream: bool) -> str:
    if stream:
        parts = client.chat(model="m", messages=ask(name, key), stream=True)
        return "".join(part.message.content or "" for part in parts)
    return client.chat(model="m", messages=ask(name, key)).message.content or ""


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", ANSWERING)
def test_a_sync_openai_client_gets_each_flow_as_its_expect_block_says(
    openai_sync: openai.OpenAI, key: str, caplog: pytest.LogCaptureFixture, name: str, stream: bool
):
    caplog.set_level(logging.INFO, logger="guard")
    expected = shown_for(name)
    if expected is None:
        with pytest.raises(openai.APIError, match=MALFORMED_REPLY):
            chat_text(openai_sync, name, key, stream)
    else:
        assert chat_text(openai_sync, name, key, stream) == expected
    expect = FLOWS[name].expect_for("m")
    assert stripped_in_log(caplog, "chat") == [expect.stripped_chars if expect else 0]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", ANSWERING)
def test_a_sync_anthropic_client_gets_each_flow_as_its_expect_block_says(
    claude_sync: anthropic.Anthropic, key: str, name: str, stream: bool
):
    expected = shown_for(name)
    if expected is None:
        with pytest.raises(anthropic.APIStatusError, match=MALFORMED_REPLY):
            messages_text(claude_sync, name, key, stream)
    else:
        assert messages_text(claude_sync, name, key, stream) == expected


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", ANSWERING)
def test_a_sync_ollama_client_gets_each_flow_as_its_expect_block_says(
    ollama_sync: ollama.Client, key: str, name: str, stream: bool
):
    expected = shown_for(name)
    if expected is None:
        with pytest.raises(ollama.ResponseError, match=MALFORMED_REPLY) as caught:
            ollama_text(ollama_sync, name, key, stream)
        assert caught.value.status_code == 502
    else:
        assert ollama_text(ollama_sync, name, key, stream) == expected


# --- the transport itself ----------------------------------------------------------------------


async def test_the_async_transport_serves_a_plain_httpx_client_too(mock_url: str, key: str):
    async with openai.AsyncOpenAI(
        base_url=f"{mock_url}/v1",
        api_key="k",
        max_retries=0,
        timeout=DEADLINE_S,
        http_client=cast(Any, httpx.AsyncClient(transport=AsyncGuardTransport())),  # typed httpx2
    ) as client:
        completion = await client.chat.completions.create(
            model="m",
            messages=ask("scaffold-split", key),
        )
    assert completion.choices[0].message.content == shown_for("scaffold-split")


class Counting(httpx.BaseTransport):
    """A wrapped transport that counts what goes through it."""

    def __init__(self) -> None:
        self.inner, self.paths = httpx.HTTPTransport(), list[str]()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_the_recovery_goes_through_the_wrapped_transport(mock_url: str, key: str):
    counting = Counting()
    with httpx.Client(transport=GuardTransport(counting), timeout=DEADLINE_S) as client:
        body = {"model": "m", "messages": ask("scaffold-recover", key)}
        answer = client.post(f"{mock_url}/v1/chat/completions", json=body)
    assert answer.json()["choices"][0]["message"]["content"] == shown_for("scaffold-recover")
    assert counting.paths == ["/v1/chat/completions"] * 2


def test_what_the_guard_does_not_guard_passes_through_untouched(mock_url: str):
    with (
        httpx.Client(timeout=DEADLINE_S) as direct,
        httpx.Client(transport=GuardTransport(), timeout=DEADLINE_S) as guarded,
    ):
        for path in ("/v1/models", "/api/tags"):
            want, got = direct.get(f"{mock_url}{path}"), guarded.get(f"{mock_url}{path}")
            assert (got.status_code, got.content) == (want.status_code, want.content)
        not_json = guarded.post(f"{mock_url}/v1/chat/completions", content=b"[1, 2]")
        assert (
            not_json.status_code
            == direct.post(f"{mock_url}/v1/chat/completions", content=b"[1, 2]").status_code
        )


def guarded_async_openai(base_url: str) -> openai.AsyncOpenAI:
    """The async OpenAI client with the one line: its httpx2 client over the transport."""
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key="k",
        max_retries=0,
        timeout=DEADLINE_S,
        http_client=httpx2.AsyncClient(transport=AsyncGuardTransport()),
    )


async def test_an_upstream_it_cannot_reach_is_a_502_in_the_apis_own_shape():
    with refusing_port() as port:
        async with guarded_async_openai(f"http://127.0.0.1:{port}/v1") as client:
            with pytest.raises(openai.InternalServerError, match="could not be reached") as caught:
                await client.chat.completions.create(model="m", messages=ask("clean", "k"))
    assert caught.value.status_code == 502


LEAK = "Backups run nightly. <|tool_call_start|>[read(path='/homelab/b.md')]<|tool_call_end|>"


def leaking_model(request: httpx.Request) -> httpx.Response:
    """A model server as a test double: httpx.MockTransport reads this body before it
    returns the response, so no stream of it is left to read."""
    if b'"stream": true' in request.content or b'"stream":true' in request.content:
        chunk = {"choices": [{"index": 0, "delta": {"content": LEAK}, "finish_reason": None}]}
        body = f"data: {httpx.Response(200, json=chunk).text}\n\ndata: [DONE]\n\n"
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
    message = {"role": "assistant", "content": LEAK}
    return httpx.Response(200, json={"choices": [{"index": 0, "message": message}]})


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_wrapped_mock_transport_whose_body_is_already_read_is_guarded(stream: bool):
    """Regression: the body httpx.MockTransport had read raised StreamConsumed, which the
    transport took for a cut answer (a 502 "The model's reply was cut off.")."""
    body = {"model": "lfm2-1.2b", "messages": [{"role": "user", "content": "?"}], "stream": stream}
    with httpx.Client(transport=GuardTransport(httpx.MockTransport(leaking_model))) as client:
        reply = client.post("http://model.invalid/v1/chat/completions", json=body)
    assert reply.status_code == 200, reply.text
    assert "Backups run nightly." in reply.text
    assert "tool_call" not in reply.text


@pytest.fixture
def no_asyncgen_hooks() -> Iterator[list[str]]:
    """The event loop's thread with no async generator hooks, as Chainlit runs a page's
    handler: an async generator dropped before its end is then closed at once, in the task
    that dropped it, and anything it awaits while closing breaks that task. Yields what the
    interpreter reported as ignored meanwhile (sys.unraisablehook)."""
    hooks, unraisable_hook = sys.get_asyncgen_hooks(), sys.unraisablehook
    ignored: list[str] = []
    sys.unraisablehook = lambda report: ignored.append(f"{report.exc_value!r} in {report.object}")
    try:
        yield ignored
    finally:
        sys.set_asyncgen_hooks(*hooks)
        sys.unraisablehook = unraisable_hook


async def test_a_stream_the_sdk_stops_at_done_closes_with_no_generator_left_to_the_collector(
    mock_url: str, key: str, no_asyncgen_hooks: list[str]
):
    """Regression: the SDK stops reading at `[DONE]` and closes the response inside an anyio
    cancel scope; the transport closed its upstream reads before the upstream response, so
    httpx's and httpcore's own generators, dropped mid-body, awaited the connection's close
    while being collected, and the SDK raised "Attempted to exit a cancel scope that isn't the
    current task's current cancel scope" into a Chainlit page's turn."""
    sys.set_asyncgen_hooks(None, None)
    async with guarded_async_openai(f"{mock_url}/v1") as client:
        for _ in range(2):  # the second on the connection the first gave back
            stream = await client.chat.completions.create(
                model="lfm2-1.2b", messages=ask("scaffold-split", key), stream=True
            )
            text = "".join([part.choices[0].delta.content or "" async for part in stream])
            assert text == shown_for("scaffold-split")
    assert no_asyncgen_hooks == []


class Remembering(httpx.BaseTransport):
    """A wrapped transport that remembers, weakly, every response it gave."""

    def __init__(self) -> None:
        self.inner, self.given = httpx.HTTPTransport(), list[weakref.ref[httpx.Response]]()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.given.append(weakref.ref(response))
        return response

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_the_transport_keeps_no_upstream_response_once_a_call_is_answered(
    mock_url: str, key: str, stream: bool
):
    """Regression: a cache meant for the stream classes sat on the body reader, which then
    kept every upstream response (its connection's buffers too) for the process's life."""
    remembering = Remembering()
    body = {"model": "lfm2-1.2b", "messages": ask("clean", key), "stream": stream}
    with httpx.Client(transport=GuardTransport(remembering), timeout=DEADLINE_S) as client:
        for _ in range(3):
            answer = client.post(f"{mock_url}/v1/chat/completions", json=body)
            assert answer.status_code == 200
            del answer
        gc.collect()
        alive = [ref for ref in remembering.given if ref() is not None]
    assert len(remembering.given) == 3
    assert alive == []


async def test_an_async_sdks_streams_share_one_upstream_connection_as_they_do_straight(
    mock_url: str, key: str, caplog: pytest.LogCaptureFixture
):
    """Regression: the guarded stream was read once, so the openai SDK's drain after `[DONE]`
    got nothing and the upstream body was closed before its end: every streamed request
    opened a new connection, where the SDK alone keeps one."""
    caplog.set_level(logging.DEBUG, logger="httpcore2.connection")
    async with guarded_async_openai(f"{mock_url}/v1") as client:
        for n in range(3):
            stream = await client.chat.completions.create(
                model="lfm2-1.2b", messages=ask("clean", f"{key}-{n}"), stream=True
            )
            text = "".join([part.choices[0].delta.content or "" async for part in stream])
            assert text == shown_for("clean")
    opened = [r for r in caplog.records if "connect_tcp.started" in r.getMessage()]
    assert len(opened) == 1


async def test_an_async_sdk_stream_stopped_mid_answer_closes_the_upstream_at_once(
    mock_url: str, key: str, http: httpx.AsyncClient
):
    """A stream goes on where it stopped only when iterated again: one the client closes
    mid-answer (Stop, G11) closes the upstream's then, the model silent for 30 s next."""
    async with asyncio.timeout(DEADLINE_S), guarded_async_openai(f"{mock_url}/v1") as client:
        stream = await client.chat.completions.create(
            model="lfm2-1.2b", messages=ask("stall", key), stream=True
        )
        async for part in stream:
            if part.choices and part.choices[0].delta.content:
                break  # the first words are here
        await stream.close()
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"
