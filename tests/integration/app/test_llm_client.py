"""scaffold_guard.app.rag.llm (transport, chunks, errors, retry layer) against the real mock LLM
served in-process (its pure parts: tests/unit/app/test_llm_*.py).

One mock server per module (the built-in flows plus a few of this file's own, written to a
temporary flow file); every test plays its flow under its own KEY and reads the mock's
journal by that KEY, polled until settled (tests/support/journal.py). Sleeping is injected, so retry
tests never wait. Every stream is read under a deadline, and no test asserts how long
anything took: a timeout is proven by its error and by the mock seeing the stream cut.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from mock_llm import build_settings, serve_mock
from scaffold_guard.app.errors import UPSTREAM_MESSAGE_CHARS, LLMError
from scaffold_guard.app.rag.llm import (
    LLMConfig,
    UpstreamClient,
    chat_stream,
    chat_stream_retried,
    make_client,
)
from scaffold_guard.app.rag.llm.errors import (
    MSG_CUT,
    MSG_ERROR_EVENT,
    MSG_MALFORMED,
    MSG_TIMEOUT,
    MSG_UNREACHABLE,
)
from scaffold_guard.app.rag.types import (
    ChatMessage,
    RetryNotice,
    RoundEnd,
    StreamPiece,
    ToolCall,
    ToolSpec,
)

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal

MODEL = "lfm2-test"

STATUSES = (400, 401, 404, 408, 409, 422, 500, 503)

OWN_FLOWS = {
    "flows": {
        "always-503": {"steps": [{"fault": {"kind": "http", "status": 503}}]},
        "busy-for-long": {
            "steps": [
                {"fault": {"kind": "http", "status": 429, "retry_after": 121}},
                {"content": "never asked for"},
            ]
        },
        # Both are far slower than the deadlines their tests set, and cost nothing for it: the
        # mock stops at once when the client leaves.
        "late-first-byte": {"steps": [{"content": "late answer", "ttft_ms": 60_000}]},
        "trickle": {
            "steps": [{"content": "one two three four five six seven eight", "delay_ms": 500}]
        },
        "reasoning-both": {
            "steps": [
                {
                    "reasoning": "Think once, think well.",
                    "content": "Done.",
                    "reasoning_field": "both",
                }
            ]
        },
        "reasoning-plain": {
            "steps": [
                {
                    "reasoning": "Plain reasoning field.",
                    "content": "Done.",
                    "reasoning_field": "reasoning",
                }
            ]
        },
        "unavailable-3x": {
            "steps": [
                *[{"fault": {"kind": "http", "status": 503}}] * 3,
                {"content": "late but fine"},
            ]
        },
        **{
            f"status-{status}": {"steps": [{"fault": {"kind": "http", "status": status}}]}
            for status in STATUSES
        },
    }
}

READ_SPEC: ToolSpec = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a note.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


# --- fixtures and helpers --------------------------------------------------------------------


@pytest.fixture(scope="module")
def mock_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("flows") / "llm_flows.yaml"
    path.write_text(json.dumps(OWN_FLOWS))  # JSON is YAML
    with serve_mock(build_settings((path,))) as url:
        yield url


@pytest.fixture(scope="module")
def flows(mock_url: str) -> dict[str, list[dict[str, Any]]]:
    """Each flow's steps as the mock reports them (the expected texts)."""
    listing = httpx.get(f"{mock_url}/_mock/flows", timeout=DEADLINE_S).json()["flows"]
    return {flow["name"]: flow["steps"] for flow in listing}


def config_for(url: str, **overrides: Any) -> LLMConfig:
    settings: dict[str, Any] = {"base_url": f"{url}/v1", "model": MODEL, "api_key": "k"}
    return LLMConfig(**(settings | overrides))


@pytest.fixture
def config(mock_url: str) -> LLMConfig:
    return config_for(mock_url)


@pytest.fixture
async def client(config: LLMConfig) -> AsyncIterator[UpstreamClient]:
    async with make_client(config) as sdk:
        yield sdk


class Sleeps:
    """An injected sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def ask(flow: str, key: str) -> list[ChatMessage]:
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": f"when do backups run? [[mock:{flow}#{key}]]"},
    ]


async def drain(stream: AsyncIterator[Any]) -> tuple[list[Any], LLMError | None]:
    """Everything the stream yields, and the LLMError that ended it (if one did)."""
    items: list[Any] = []
    async with asyncio.timeout(DEADLINE_S):
        try:
            async for item in stream:
                items.append(item)
        except LLMError as error:
            return items, error
    return items, None


async def retried(
    client: UpstreamClient, config: LLMConfig, flow: str, key: str
) -> tuple[list[Any], LLMError | None, Sleeps]:
    """Run `chat_stream_retried` on a flow with sleeping recorded, not waited."""
    sleeps = Sleeps()
    stream = chat_stream_retried(client, config, ask(flow, key), None, sleep=sleeps)
    items, error = await drain(stream)
    return items, error, sleeps


def text_of(items: list[Any], kind: str) -> str:
    return "".join(i.text for i in items if isinstance(i, StreamPiece) and i.kind == kind)


async def outcome(http: httpx.AsyncClient, key: str) -> str:
    """The KEY's single request's outcome, once the mock has finished it.

    For the `slow` flow (about 12 s) `client_disconnected` proves the client closed the
    stream: left open, it would have ended `completed`.
    """
    [entry] = await settled_journal(http, key)
    return entry.outcome


# --- one streaming request -------------------------------------------------------------------


async def test_clean_stream_yields_the_content_then_one_round_end(
    client: UpstreamClient, key: str, flows: dict[str, list[dict[str, Any]]]
) -> None:
    items, error = await drain(chat_stream(client, MODEL, ask("clean", key), None))

    assert error is None
    assert text_of(items, "content") == flows["clean"][0]["content"]
    assert [i for i in items if isinstance(i, RoundEnd)] == [RoundEnd((), "stop")]
    assert items[-1] == RoundEnd((), "stop")


async def test_text_is_yielded_as_it_arrives_not_when_the_stream_ends(
    client: UpstreamClient, key: str, flows: dict[str, list[dict[str, Any]]]
) -> None:
    stream = chat_stream(client, MODEL, ask("slow", key), None)
    async with asyncio.timeout(DEADLINE_S):
        first = await anext(stream)
        await stream.aclose()

    full = flows["slow"][0]["content"]
    assert isinstance(first, StreamPiece)
    assert full.startswith(first.text)
    assert first.text != full  # the slow flow takes about 12 s; its first words came alone


@pytest.mark.parametrize("tools", [None, [READ_SPEC]], ids=["no-tools", "tools"])
async def test_request_carries_tools_only_when_given(
    client: UpstreamClient, http: httpx.AsyncClient, key: str, tools: list[ToolSpec] | None
) -> None:
    await drain(chat_stream(client, MODEL, ask("clean", key), tools))

    [entry] = await settled_journal(http, key)
    assert entry.body["stream"] is True
    assert entry.body["model"] == MODEL
    if tools is None:
        assert "tools" not in entry.body
    else:
        assert entry.body["tools"] == tools


async def test_thinking_arrives_as_thinking_pieces_before_the_content(
    client: UpstreamClient, key: str, flows: dict[str, list[dict[str, Any]]]
) -> None:
    items, error = await drain(chat_stream(client, MODEL, ask("thinking", key), None))

    assert error is None
    assert text_of(items, "thinking") == flows["thinking"][0]["reasoning"]
    assert text_of(items, "content") == flows["thinking"][0]["content"]
    kinds = [i.kind for i in items if isinstance(i, StreamPiece)]
    assert kinds == sorted(kinds, key=lambda kind: kind != "thinking")


@pytest.mark.parametrize("flow", ["reasoning-both", "reasoning-plain"])
async def test_reasoning_field_variants_give_the_thinking_exactly_once(
    client: UpstreamClient, key: str, flow: str, flows: dict[str, list[dict[str, Any]]]
) -> None:
    items, error = await drain(chat_stream(client, MODEL, ask(flow, key), None))

    assert error is None
    assert text_of(items, "thinking") == flows[flow][0]["reasoning"]


async def test_a_structured_tool_call_is_materialized_in_the_round_end(
    client: UpstreamClient, key: str, flows: dict[str, list[dict[str, Any]]]
) -> None:
    items, error = await drain(
        chat_stream(client, MODEL, ask("tool-then-answer", key), [READ_SPEC])
    )

    assert error is None
    assert not [i for i in items if isinstance(i, StreamPiece)]
    [end] = items
    assert isinstance(end, RoundEnd)
    assert end.finish_reason == "tool_calls"
    [call] = end.tool_calls
    assert call.name == "read"
    assert call.id
    assert call.arguments == flows["tool-then-answer"][0]["tool_calls"][0]["arguments"]
    assert json.loads(call.arguments) == {"path": "/homelab/backup-notes.md"}


async def test_several_tool_calls_in_one_round_keep_their_order_and_arguments(
    client: UpstreamClient, key: str, flows: dict[str, list[dict[str, Any]]]
) -> None:
    items, error = await drain(chat_stream(client, MODEL, ask("multi-tool", key), [READ_SPEC]))

    assert error is None
    end = items[-1]
    assert isinstance(end, RoundEnd)
    expected = flows["multi-tool"][0]["tool_calls"]
    assert [c.name for c in end.tool_calls] == [c["name"] for c in expected]
    assert [c.arguments for c in end.tool_calls] == [c["arguments"] for c in expected]
    assert len({c.id for c in end.tool_calls}) == 2


async def test_second_request_of_a_tool_turn_gets_the_answer(
    client: UpstreamClient, key: str, flows: dict[str, list[dict[str, Any]]]
) -> None:
    await drain(chat_stream(client, MODEL, ask("tool-then-answer", key), [READ_SPEC]))
    items, error = await drain(chat_stream(client, MODEL, ask("tool-then-answer", key), None))

    assert error is None
    assert text_of(items, "content") == flows["tool-then-answer"][1]["content"]
    assert items[-1] == RoundEnd((), "stop")


async def test_a_length_cut_answer_ends_normally_with_finish_reason_length(
    client: UpstreamClient, key: str
) -> None:
    items, error = await drain(chat_stream(client, MODEL, ask("length", key), None))

    assert error is None
    assert items[-1] == RoundEnd((), "length")


@pytest.mark.parametrize(
    ("flow", "message", "retryable"),
    [
        ("drop-mid-stream", MSG_CUT, True),
        ("cut-eof", MSG_CUT, True),
        ("error-event", MSG_ERROR_EVENT, False),
        ("malformed-sse", MSG_MALFORMED, False),
    ],
)
async def test_a_stream_that_breaks_after_content_raises_llm_error(
    client: UpstreamClient, key: str, flow: str, message: str, retryable: bool
) -> None:
    items, error = await drain(chat_stream(client, MODEL, ask(flow, key), None))

    assert error is not None
    assert error.message == message
    assert error.retryable is retryable
    assert error.status is None
    assert text_of(items, "content")  # some content came before the break
    assert not [i for i in items if isinstance(i, RoundEnd)]


@pytest.mark.parametrize(
    ("status", "wording", "retryable"),
    [
        (400, "rejected the request", False),
        (401, "refused the credentials", False),
        (404, "does not know this model", False),
        (408, "could not take the request", True),
        (409, "could not take the request", True),
        (422, "rejected the request", False),
        (500, "had a problem", True),
        (503, "had a problem", True),
    ],
)
async def test_an_http_error_becomes_a_plain_llm_error_with_its_status(
    client: UpstreamClient, key: str, status: int, wording: str, retryable: bool
) -> None:
    items, error = await drain(chat_stream(client, MODEL, ask(f"status-{status}", key), None))

    assert items == []
    assert error is not None
    assert error.status == status
    assert error.retryable is retryable
    assert wording in error.message
    assert f"HTTP {status}" in error.message
    assert "http://" not in error.message
    assert "mock fault" not in error.message  # upstream error text is not user copy


async def test_rate_limit_error_carries_the_retry_after_seconds(
    client: UpstreamClient, key: str
) -> None:
    _, error = await drain(chat_stream(client, MODEL, ask("rate-limited", key), None))

    assert error is not None
    assert error.status == 429
    assert error.retry_after_s == 1.0
    assert error.message == "The model service is busy (HTTP 429). Please try again in a moment."


async def test_overall_deadline_ends_a_trickling_stream(
    client: UpstreamClient, http: httpx.AsyncClient, key: str, flows: dict[str, Any]
) -> None:
    # The client's own httpx timeouts are the config's 120 s, so only the 1 s overall deadline
    # can end a stream the mock takes at least 4 s to send (eight words, 500 ms apart).
    items, error = await drain(chat_stream(client, MODEL, ask("trickle", key), None, timeout_s=1.0))

    assert error is not None
    assert error.message == MSG_TIMEOUT
    assert error.retryable
    full = flows["trickle"][0]["content"]
    assert full.startswith(text_of(items, "content"))
    assert text_of(items, "content") != full
    assert not [i for i in items if isinstance(i, RoundEnd)]
    assert await outcome(http, key) == "client_disconnected"


# --- closing the upstream response -----------------------------------------------------------


def open_stream(
    retried: bool, client: UpstreamClient, config: LLMConfig, key: str
) -> AsyncGenerator[StreamPiece | RetryNotice | RoundEnd, None]:
    messages = ask("slow", key)
    if retried:
        return chat_stream_retried(client, config, messages, None, sleep=Sleeps())
    return chat_stream(client, MODEL, messages, None)


def all_closed(client: UpstreamClient) -> bool:
    """Every response the client opened has been closed, and no pooled connection is lent
    out. The streams under test are held by the test, so only an explicit close can close
    them (CPython's async generator finalizer would otherwise close a dropped one soon
    after, and hide a missing close)."""
    return client.in_flight == 0 and client.idle()


@pytest.mark.parametrize("retried", [False, True], ids=["chat_stream", "chat_stream_retried"])
async def test_aclose_after_the_first_piece_disconnects_from_the_model_server(
    client: UpstreamClient,
    config: LLMConfig,
    http: httpx.AsyncClient,
    key: str,
    retried: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream = open_stream(retried, client, config, key)
    async with asyncio.timeout(DEADLINE_S):
        first = await anext(stream)
        assert isinstance(first, StreamPiece)
        await stream.aclose()
        assert all_closed(client)  # closed by the time aclose() returns, not later by the GC

    assert await outcome(http, key) == "client_disconnected"


@pytest.mark.parametrize("retried", [False, True], ids=["chat_stream", "chat_stream_retried"])
async def test_cancelling_the_consumer_disconnects_from_the_model_server(
    client: UpstreamClient,
    config: LLMConfig,
    http: httpx.AsyncClient,
    key: str,
    retried: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    got_one = asyncio.Event()

    async def consume() -> None:
        async for _ in open_stream(retried, client, config, key):
            got_one.set()

    async with asyncio.timeout(DEADLINE_S):
        task = asyncio.create_task(consume())
        await got_one.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all_closed(client)

    assert await outcome(http, key) == "client_disconnected"


@pytest.mark.parametrize(
    "flow", ["clean", "drop-mid-stream", "error-event", "malformed-sse", "cut-eof"]
)
async def test_the_sdk_stream_is_closed_when_the_request_ends_either_way(
    client: UpstreamClient, key: str, flow: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await drain(chat_stream(client, MODEL, ask(flow, key), None))

    assert all_closed(client)


async def test_a_finished_stream_leaves_the_request_completed(
    client: UpstreamClient, http: httpx.AsyncClient, key: str
) -> None:
    await drain(chat_stream(client, MODEL, ask("clean", key), None))

    assert await outcome(http, key) == "completed"


# --- retries ---------------------------------------------------------------------------------


async def test_rate_limited_request_is_retried_once_after_the_advised_wait(
    client: UpstreamClient, config: LLMConfig, http: httpx.AsyncClient, key: str
) -> None:
    items, error, sleeps = await retried(client, config, "rate-limited", key)

    assert error is None
    assert [i for i in items if isinstance(i, RetryNotice)] == [
        RetryNotice(attempt=2, delay_s=1.0, reason="HTTP 429 rate limited")
    ]
    assert isinstance(items[0], RetryNotice)
    assert sleeps.delays == [1.0]
    assert text_of(items, "content")
    assert items[-1] == RoundEnd((), "stop")
    assert len(await settled_journal(http, key)) == 2


async def test_server_error_is_retried_after_a_jittered_backoff(
    client: UpstreamClient, config: LLMConfig, http: httpx.AsyncClient, key: str
) -> None:
    items, error, sleeps = await retried(client, config, "error-then-ok", key)

    assert error is None
    [notice] = [i for i in items if isinstance(i, RetryNotice)]
    assert notice.attempt == 2
    assert notice.reason == "HTTP 503 server error"
    assert 0.75 * config.retry_base_delay_s <= notice.delay_s <= config.retry_base_delay_s
    assert sleeps.delays == [notice.delay_s]
    assert items[-1] == RoundEnd((), "stop")
    assert len(await settled_journal(http, key)) == 2


@pytest.mark.parametrize("flow", ["drop-mid-stream", "cut-eof", "error-event", "malformed-sse"])
async def test_no_retry_once_content_has_been_yielded(
    client: UpstreamClient, config: LLMConfig, http: httpx.AsyncClient, key: str, flow: str
) -> None:
    items, error, sleeps = await retried(client, config, flow, key)

    assert error is not None
    assert text_of(items, "content")
    assert not [i for i in items if isinstance(i, RetryNotice)]
    assert sleeps.delays == []
    assert len(await settled_journal(http, key)) == 1


async def test_retries_are_bounded_and_then_the_last_error_is_raised(
    client: UpstreamClient, config: LLMConfig, http: httpx.AsyncClient, key: str
) -> None:
    items, error, sleeps = await retried(client, config, "always-503", key)

    assert error is not None
    assert error.status == 503
    assert error.message == (
        "The model service had a problem (HTTP 503). Please try again in a moment."
    )
    assert [i.attempt for i in items if isinstance(i, RetryNotice)] == [2, 3]
    assert all(isinstance(i, RetryNotice) for i in items)
    first, second = sleeps.delays
    assert 0.375 <= first <= 0.5
    assert 0.75 <= second <= 1.0
    assert len(await settled_journal(http, key)) == config.max_attempts


async def test_non_retryable_client_error_fails_at_once(
    client: UpstreamClient, config: LLMConfig, http: httpx.AsyncClient, key: str
) -> None:
    items, error, sleeps = await retried(client, config, "status-400", key)

    assert items == []
    assert error is not None
    assert error.status == 400
    assert not error.retryable
    assert sleeps.delays == []
    assert len(await settled_journal(http, key)) == 1


async def test_retry_after_above_the_cap_gives_up_and_says_how_long_was_asked(
    client: UpstreamClient, config: LLMConfig, http: httpx.AsyncClient, key: str
) -> None:
    """Regression (issue 12): a Retry-After of 3600 gave up at once but still said "try
    again in a moment"."""
    items, error, sleeps = await retried(client, config, "busy-for-long", key)

    assert items == []
    assert error is not None
    assert error.message == (
        "The model service is busy (HTTP 429) and asked to wait about 2 min."
        " Please try again later."
    )
    assert sleeps.delays == []
    assert len(await settled_journal(http, key)) == 1


async def test_a_slow_first_byte_spends_the_whole_budget_and_is_not_retried(
    mock_url: str, http: httpx.AsyncClient, key: str
) -> None:
    """The budget covers the whole call (issue 12): a first byte that never comes within it
    leaves no time for a second attempt."""
    config = config_for(mock_url, timeout_s=0.4, max_attempts=2)
    sleeps = Sleeps()
    async with make_client(config) as sdk:
        items, error = await drain(
            chat_stream_retried(sdk, config, ask("late-first-byte", key), None, sleep=sleeps)
        )

    assert error is not None
    assert error.message == MSG_TIMEOUT
    assert [i for i in items if isinstance(i, RetryNotice)] == []
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


@contextmanager
def refusing_port() -> Generator[int]:
    """A loopback port bound but not listening: connecting is refused at once, and no other
    server (another xdist worker's, say) can take the port while the test uses it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_an_unreachable_server_is_retried_then_reported_plainly() -> None:
    sleeps = Sleeps()
    with refusing_port() as port:
        config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model=MODEL)
        async with make_client(config) as sdk:
            items, error = await drain(
                chat_stream_retried(sdk, config, ask("clean", "k"), None, sleep=sleeps)
            )

    assert error is not None
    assert error.message == MSG_UNREACHABLE
    assert [i.reason for i in items if isinstance(i, RetryNotice)] == ["connection failed"] * 2
    assert len(sleeps.delays) == config.max_attempts - 1


# --- adversarial Retry-After, end to end -----------------------------------------------------


class CannedServer:
    """A model server that answers every request with the same response.

    For the shapes the mock deliberately never sends: adversarial Retry-After headers and
    streams from lenient or quirky OpenAI-compatible servers. It is a bare asyncio server on
    a loopback port (started by `client()`), writing the canned response with its
    Content-Length after reading each request whole, so `requests` counts exactly.
    """

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.requests = 0

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(
                    (int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                     if line.startswith(b"content-length:")),
                    0,
                )  # fmt: skip
                await reader.readexactly(length)
                self.requests += 1
                lines = [f"HTTP/1.1 {self.status} Canned"]
                lines += [f"{name}: {value}" for name, value in self.headers.items()]
                lines += [f"content-length: {len(self.body)}", "", ""]
                writer.write("\r\n".join(lines).encode() + self.body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @asynccontextmanager
    async def client(self, config: LLMConfig) -> AsyncGenerator[UpstreamClient]:
        server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            async with make_client(replace(config, base_url=f"http://127.0.0.1:{port}/v1")) as up:
                yield up
        finally:
            server.close()


CANNED_URL = "http://canned.invalid/v1"  # replaced by the canned server's own address


def rate_limited_by(retry_after: str) -> CannedServer:
    error = {"message": "slow down", "type": "rate_limit", "param": None, "code": None}
    headers = {"content-type": "application/json", "retry-after": retry_after}
    return CannedServer(429, headers, json.dumps({"error": error}).encode())


def sse_server(*events: dict[str, Any] | str) -> CannedServer:
    """A server streaming these chunks (dicts as JSON, strings as they are) as SSE."""
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    return CannedServer(200, {"content-type": "text/event-stream"}, "".join(lines).encode())


@dataclass(frozen=True)
class HttpDateIn:
    """A Retry-After HTTP date `seconds` from when the test runs.

    Built in the test, never at collection: a date made while collecting would be part of
    the test's id, and two xdist workers collecting a second apart would disagree on it.
    """

    seconds: float

    def header(self) -> str:
        return email.utils.formatdate(time.time() + self.seconds, usegmt=True)


GIVE_UP = "give up"
BACKOFF = "backoff"


@pytest.mark.parametrize(
    ("retry_after", "expected"),
    [
        ("inf", GIVE_UP),
        ("121", GIVE_UP),
        ("1e400", GIVE_UP),
        ("9" * 35, GIVE_UP),
        pytest.param(HttpDateIn(3600), GIVE_UP, id="http-date-in-an-hour"),
        ("nan", BACKOFF),
        ("-5", BACKOFF),
        ("0", BACKOFF),
        ("soon, probably", BACKOFF),
        pytest.param(HttpDateIn(-3600), BACKOFF, id="http-date-an-hour-ago"),
        ("3", 3.0),
    ],
)
async def test_adversarial_retry_after_never_crashes_or_waits_unboundedly(
    retry_after: str | HttpDateIn, expected: str | float
) -> None:
    sleeps = Sleeps()
    header = retry_after if isinstance(retry_after, str) else retry_after.header()
    server = rate_limited_by(header)
    config = LLMConfig(base_url=CANNED_URL, model=MODEL)
    async with server.client(config) as sdk:
        items, error = await drain(
            chat_stream_retried(sdk, config, ask("clean", "k"), None, sleep=sleeps)
        )

    assert error is not None
    assert error.status == 429
    assert all(math.isfinite(d) and 0 <= d <= config.retry_after_cap_s for d in sleeps.delays)
    if expected == GIVE_UP:
        assert (server.requests, sleeps.delays, items) == (1, [], [])
    elif expected == BACKOFF:
        assert server.requests == config.max_attempts
        assert all(d <= config.retry_max_delay_s for d in sleeps.delays)
    else:
        assert sleeps.delays == [expected] * (config.max_attempts - 1)


# --- lenient reading of other servers' streams ----------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> Any:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "choices": [choice]} | extra


def tool_delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, **fields}]}


async def read_canned(server: CannedServer) -> list[Any]:
    async with server.client(LLMConfig(base_url=CANNED_URL, model=MODEL)) as sdk:
        items, error = await drain(chat_stream(sdk, MODEL, ask("clean", "k"), [READ_SPEC]))
    assert error is None
    return items


async def test_a_server_repeating_id_and_name_on_every_delta_does_not_corrupt_the_call() -> None:
    fn = {"name": "read", "arguments": ""}
    server = sse_server(
        chunk(tool_delta(0, id="call_a", type="function", function=fn)),
        chunk(tool_delta(0, id="call_a", function={"name": "read", "arguments": '{"path": '})),
        chunk(tool_delta(0, id="call_a", function={"name": "read", "arguments": '"/x.md"}'})),
        chunk(finish="tool_calls"),
        "[DONE]",
    )
    [end] = await read_canned(server)

    assert end == RoundEnd((ToolCall("call_a", "read", '{"path": "/x.md"}'),), "tool_calls")


async def test_a_tool_call_without_an_id_gets_one_and_stray_deltas_are_tolerated() -> None:
    server = sse_server(
        chunk(tool_delta(1, function={"name": "list", "arguments": "{}"})),
        chunk(tool_delta(1)),  # no function at all
        chunk(finish="tool_calls"),
        "[DONE]",
    )
    [end] = await read_canned(server)

    assert end == RoundEnd((ToolCall("call_1", "list", "{}"),), "tool_calls")


async def test_null_choices_and_other_choice_indexes_are_skipped() -> None:
    other = {"index": 1, "delta": {"content": "second choice"}, "finish_reason": None}
    server = sse_server(
        chunk({"content": "first"}),
        {"id": "c1", "object": "chat.completion.chunk", "choices": [other]},
        {"id": "c1", "object": "chat.completion.chunk", "choices": None, "usage": None},
        chunk(finish="stop"),
        "[DONE]",
    )
    items = await read_canned(server)

    assert items == [StreamPiece("content", "first"), RoundEnd((), "stop")]


async def test_chunks_that_arrive_in_one_read_go_on_as_one_piece_per_kind() -> None:
    server = sse_server(
        chunk({"reasoning_content": "think "}),
        chunk({"reasoning_content": "more"}),
        chunk({"content": "Back"}),
        chunk({"content": "ups run"}),
        chunk({"content": " nightly."}, finish="stop"),
        "[DONE]",
    )
    items = await read_canned(server)

    assert items == [
        StreamPiece("thinking", "think more"),
        StreamPiece("content", "Backups run nightly."),
        RoundEnd((), "stop"),
    ]


async def test_a_lone_surrogate_escape_in_the_models_json_becomes_a_replacement_character():
    """Regression (issue 12): `"\\ud800"` in a chunk's JSON made a string that could be shown
    but never stored: the turn's query-log write raised after the answer had gone out."""
    server = sse_server(
        '{"choices": [{"index": 0, "delta": {"content": "a\\ud800b", "reasoning": "\\udfff"}}]}',
        chunk(finish="stop"),
        "[DONE]",
    )
    items = await read_canned(server)

    assert items == [
        StreamPiece("thinking", "\ufffd"),
        StreamPiece("content", "a\ufffdb"),
        RoundEnd((), "stop"),
    ]


@pytest.mark.parametrize(
    "data",
    ["[" * 100_000 + "]" * 100_000, '{"choices": [' * 50_000 + "]}" * 50_000],
    ids=["arrays", "objects"],
)
async def test_a_chunk_nested_past_the_parsers_depth_is_a_malformed_reply(data: str) -> None:
    """Regression: json.loads raises RecursionError, not ValueError, on a data line nested
    100 000 deep; it escaped the client as an unexpected error (a generic error frame and a
    traceback in the log) instead of "could not be read"."""
    server = sse_server(chunk({"content": "a"}), data, chunk(finish="stop"), "[DONE]")
    async with server.client(LLMConfig(base_url=CANNED_URL, model=MODEL)) as sdk:
        items, error = await drain(chat_stream(sdk, MODEL, ask("clean", "k"), None))

    assert items == [StreamPiece("content", "a")]
    assert error is not None
    assert (error.message, error.reason) == (MSG_MALFORMED, "malformed stream data")


async def test_a_finish_reason_without_done_is_a_complete_round() -> None:
    server = sse_server(chunk({"content": "all of it"}), chunk(finish="stop"))
    items = await read_canned(server)

    assert items == [StreamPiece("content", "all of it"), RoundEnd((), "stop")]


# --- the service's own messages and the time budget ----------------------------------------


async def test_a_rejection_carries_the_services_own_message_as_one_short_line(
    client: UpstreamClient, key: str
) -> None:
    _, error = await drain(chat_stream(client, MODEL, ask("scafold-split", key), None))

    assert error is not None
    assert error.status == 400
    assert error.upstream is not None
    assert error.upstream.startswith("Unknown mock flow 'scafold-split'. Known flows: ")
    assert len(error.upstream) <= UPSTREAM_MESSAGE_CHARS
    assert "Unknown mock flow" not in error.message  # the app's copy stays its own


async def test_a_server_error_carries_no_upstream_message(client: UpstreamClient, key: str) -> None:
    _, error = await drain(chat_stream(client, MODEL, ask("status-503", key), None))

    assert error is not None
    assert error.upstream is None


class ClockedSleeps(Sleeps):
    """Sleeps that move a fake clock on by each delay, as a real wait would."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0

    async def __call__(self, delay: float) -> None:
        await super().__call__(delay)
        self.now += delay

    def clock(self) -> float:
        return self.now


async def test_the_time_budget_covers_every_attempt_and_wait(
    mock_url: str, http: httpx.AsyncClient, key: str
) -> None:
    """Regression (issue 12): SG_LLM_TIMEOUT_S applied per attempt, so a 3 s budget made a
    10.3 s turn. Here a 1 s budget takes one 0.6 s wait, not the 1.2 s one after it."""
    config = config_for(
        mock_url, timeout_s=1.0, retry_base_delay_s=0.6, retry_max_delay_s=8, max_attempts=5
    )
    sleeps = ClockedSleeps()
    async with make_client(config) as sdk:
        stream = chat_stream_retried(
            sdk, config, ask("unavailable-3x", key), None,
            sleep=sleeps, rand=lambda: 0.0, clock=sleeps.clock,
        )  # fmt: skip
        items, error = await drain(stream)

    assert sleeps.delays == [0.6]
    assert error is not None
    assert error.status == 503
    assert [i.attempt for i in items if isinstance(i, RetryNotice)] == [2]
    assert len(await settled_journal(http, key, count=2)) == 2
