"""The mock's Gemini API (`/v1beta/models/{model}:generateContent` and
`:streamGenerateContent`, also under `/v1/`) through the official google-genai client: one
flow of each outcome class (played_flows.SAMPLED; every built-in flow is read with the
client's model in tests/unit/mock_llm/wire/test_gemini_wire.py), streamed and whole, every
fault kind as the client raises it, and the request read as the other formats' are (the
journal, turns, side calls, extract steps, refusals in Google's error shape).

google-genai streams with `alt=sse`. The default framing (no `alt`), one JSON array
written element by element, is read here with raw httpx by `JsonArrayReader`, the way
Google's own REST streaming iterator reads it (google-api-core's `ResponseIterator`).

The client is never let near Google: every client has the mock as its base URL and an API
key (no credentials are looked up), and no retries (google-genai retries only when told to).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import aiohttp
import httpx
import pytest
from google import genai
from google.genai import errors, types

from mock_llm import build_settings, serve_mock
from mock_llm.server.answers import MAX_ERROR_MESSAGE_CHARS

from ...support.deadlines import DEADLINE_S
from ...support.journal import settled_journal
from ...support.servers import TEST_FLOWS
from ..helpers.played_flows import FLOWS, SAMPLED

pytestmark = pytest.mark.filterwarnings(
    # google-genai's aiohttp transport subclasses aiohttp.ClientSession, which aiohttp
    # discourages with a DeprecationWarning on every client (not ours to fix)
    "ignore:Inheritance class AiohttpClientSession from ClientSession:DeprecationWarning"
)
MODEL = "gemini-test"
TITLE_RULE = r"^### Task:"
Backend = Literal["aiohttp", "httpx"]
BACKENDS: tuple[Backend, ...] = ("aiohttp", "httpx")
"""google-genai's two async transports: aiohttp when it is installed (the default), httpx
when a transport is given; each reads the stream with its own line splitter."""
CUT: dict[Backend, type[Exception]] = {
    "aiohttp": aiohttp.ClientPayloadError,
    "httpx": httpx.RemoteProtocolError,
}
"""What each transport raises on a body the server cut short."""


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    """A mock of this module's own, with a side-call rule (no other module's requests are
    titles, and this module's rules never reach them)."""
    with serve_mock(build_settings((TEST_FLOWS,), side_calls=[TITLE_RULE])) as url:
        yield url


def client_for(url: str, backend: Backend = "aiohttp", api_version: str | None = "v1beta"):
    """google-genai on the mock at `url` (`api_version` None: the client's own default)."""
    options = types.HttpOptions(
        base_url=url,
        api_version=api_version,
        timeout=int(DEADLINE_S * 1000),
        async_client_args={"transport": httpx.AsyncHTTPTransport()} if backend == "httpx" else None,
    )
    return genai.Client(vertexai=False, api_key="test-key", http_options=options)


@asynccontextmanager
async def gemini(url: str, backend: Backend = "aiohttp", api_version: str | None = "v1beta"):
    client = client_for(url, backend, api_version)
    try:
        yield client.aio
    finally:
        await client.aio.aclose()


@pytest.fixture
async def aio(mock_url: str) -> AsyncIterator[Any]:
    async with gemini(mock_url) as client:
        yield client


def ask(flow: str, key: str) -> str:
    return f"When do backups run? [[mock:{flow}#{key}]]"


def parts_of(response: types.GenerateContentResponse) -> list[types.Part]:
    if not response.candidates or response.candidates[0].content is None:
        return []
    return response.candidates[0].content.parts or []


def text_of(responses: list[types.GenerateContentResponse], *, thought: bool = False) -> str:
    return "".join(
        part.text
        for response in responses
        for part in parts_of(response)
        if part.text is not None and bool(part.thought) == thought
    )


def calls_of(
    responses: list[types.GenerateContentResponse],
) -> list[tuple[str | None, dict[str, Any] | None]]:
    return [
        (part.function_call.name, part.function_call.args)
        for response in responses
        for part in parts_of(response)
        if part.function_call is not None
    ]


def finish_of(response: types.GenerateContentResponse) -> str | None:
    assert response.candidates
    reason = response.candidates[0].finish_reason
    return None if reason is None else reason.value


@dataclass
class Streamed:
    """What `generate_content_stream` yielded, and the error that ended it, if any."""

    chunks: list[types.GenerateContentResponse] = field(
        default_factory=list[types.GenerateContentResponse]
    )
    error: Exception | None = None


async def streamed(aio: Any, flow: str, key: str, **config: Any) -> Streamed:
    """Every chunk of a streamed request; an error that ended the stream is kept."""
    result = Streamed()
    async with asyncio.timeout(DEADLINE_S):
        try:
            stream = await aio.models.generate_content_stream(
                model=MODEL, contents=ask(flow, key), config=config or None
            )
            async for chunk in stream:
                result.chunks.append(chunk)
        except (errors.APIError, ValueError, aiohttp.ClientError, httpx.HTTPError) as exc:
            result.error = exc
    return result


async def streamed_or_raise(aio: Any, flow: str, key: str) -> Streamed:
    got = await streamed(aio, flow, key)
    if got.error is not None:
        raise got.error
    return got


async def answer(aio: Any, flow: str, key: str, *, stream: bool) -> object:
    """A streamed answer read to its end, or a whole one; either raises what the client
    raised."""
    return await streamed_or_raise(aio, flow, key) if stream else await whole(aio, flow, key)


def details(error: errors.APIError) -> list[dict[str, Any]]:
    """The `details` of Google's error body, as the client kept it."""
    return cast(dict[str, Any], error.details)["error"]["details"]


async def whole(aio: Any, flow: str, key: str) -> types.GenerateContentResponse:
    async with asyncio.timeout(DEADLINE_S):
        return await aio.models.generate_content(model=MODEL, contents=ask(flow, key))


# --- every flow, streamed and whole -------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flow", SAMPLED)
async def test_a_flow_plays_alike_streamed_and_whole(
    mock_url: str, key: str, flow: str, backend: Backend
):
    step = FLOWS[flow].steps[0]
    expected_calls = [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
    finish = "MAX_TOKENS" if step.resolved_finish_reason == "length" else "STOP"
    async with gemini(mock_url, backend) as aio:
        got = await streamed(aio, flow, f"{key}-s")
        answer = await whole(aio, flow, f"{key}-w")
    assert got.error is None
    chunks = got.chunks
    assert (text_of(chunks), text_of(chunks, thought=True)) == (step.content, step.reasoning)
    assert calls_of(chunks) == expected_calls
    assert [finish_of(c) for c in chunks] == [None] * (len(chunks) - 1) + [finish]
    assert {(c.model_version, c.response_id) for c in chunks} == {(MODEL, chunks[0].response_id)}
    assert (text_of([answer]), text_of([answer], thought=True)) == (step.content, step.reasoning)
    assert calls_of([answer]) == expected_calls
    assert (finish_of(answer), answer.model_version) == (finish, MODEL)
    usage = answer.usage_metadata
    assert usage is not None
    assert usage == chunks[-1].usage_metadata
    thoughts = usage.thoughts_token_count or 0
    assert usage.total_token_count == (
        (usage.prompt_token_count or 0) + (usage.candidates_token_count or 0) + thoughts
    )
    assert (thoughts > 0) == bool(step.reasoning)


async def test_the_clients_default_v1_path_is_answered_too(
    mock_url: str, http: httpx.AsyncClient, key: str
):
    async with gemini(mock_url, api_version=None) as aio:
        answer = await whole(aio, "clean", key)
    assert text_of([answer]) == FLOWS["clean"].steps[0].content
    [entry] = await settled_journal(http, key)
    assert entry.path == f"/v1/models/{MODEL}:generateContent"


async def test_a_long_stream_comes_at_its_pace_and_is_left_when_the_client_closes(
    mock_url: str, http: httpx.AsyncClient, key: str
):
    """google-genai's stream, left and closed (`aclose`), keeps its connection open until
    its inner generators are collected; closing the client closes it at once."""
    text = ""
    async with gemini(mock_url) as aio, asyncio.timeout(DEADLINE_S):
        stream = await aio.models.generate_content_stream(model=MODEL, contents=ask("slow", key))
        async for chunk in stream:
            text += text_of([chunk])
            if len(text) > 40:
                break
        assert isinstance(stream, AsyncGenerator)
        await stream.aclose()
    assert FLOWS["slow"].steps[0].content.startswith(text)
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


# --- faults, as the client raises them ----------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_rate_limit_is_a_client_error_429_that_says_when_to_retry(
    aio: Any, key: str, stream: bool
):
    with pytest.raises(errors.ClientError) as caught:
        await answer(aio, "rate-limited", key, stream=stream)
    error = caught.value
    assert (error.code, error.status) == (429, "RESOURCE_EXHAUSTED")
    assert error.message == "Rate limit reached (mock fault). Please try again later."
    assert error.response.headers["retry-after"] == "1"
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}
    assert retry_info in details(error)
    again = await whole(aio, "rate-limited", key)
    assert text_of([again]) == FLOWS["rate-limited"].steps[1].content


async def test_an_unavailable_server_is_a_server_error_503(aio: Any, key: str):
    with pytest.raises(errors.ServerError) as caught:
        await whole(aio, "error-then-ok", key)
    assert (caught.value.code, caught.value.status) == (503, "UNAVAILABLE")


async def test_an_in_band_error_ends_the_stream_as_a_server_error_after_some_text(
    aio: Any, http: httpx.AsyncClient, key: str
):
    got = await streamed(aio, "error-event", key)
    assert isinstance(got.error, errors.ServerError)
    assert (got.error.code, got.error.status) == (500, "INTERNAL")
    assert got.error.message == "The model crashed (mock fault)."
    assert text_of(got.chunks)
    assert FLOWS["error-event"].steps[0].content.startswith(text_of(got.chunks))
    [entry] = await settled_journal(http, key)
    assert (entry.outcome, entry.fault) == ("fault", "error event after 3 chunks")


async def test_a_whole_answer_with_an_in_band_error_is_a_server_error_500(aio: Any, key: str):
    with pytest.raises(errors.ServerError, match="The model crashed") as caught:
        await whole(aio, "error-event", key)
    assert caught.value.code == 500


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_cut_stream_is_a_broken_read_after_some_text(
    mock_url: str, key: str, backend: Backend
):
    async with gemini(mock_url, backend) as aio:
        got = await streamed(aio, "drop-mid-stream", f"{key}-s")
        with pytest.raises(CUT[backend]):
            await whole(aio, "drop-mid-stream", f"{key}-w")
    assert isinstance(got.error, CUT[backend])
    assert text_of(got.chunks)
    assert FLOWS["drop-mid-stream"].steps[0].content.startswith(text_of(got.chunks))


async def test_a_clean_eof_ends_the_stream_without_a_finish_reason(aio: Any, key: str):
    got = await streamed(aio, "cut-eof", key)
    assert got.error is None
    assert text_of(got.chunks)
    assert FLOWS["cut-eof"].steps[0].content.startswith(text_of(got.chunks))
    assert [finish_of(c) for c in got.chunks] == [None] * len(got.chunks)


async def test_a_malformed_line_fails_to_parse(aio: Any, key: str):
    got = await streamed(aio, "malformed-sse", f"{key}-s")
    assert isinstance(got.error, errors.UnknownApiResponseError)
    assert "{this is not json" in str(got.error)
    with pytest.raises(json.JSONDecodeError):
        await whole(aio, "malformed-sse", f"{key}-w")


async def test_a_stall_pauses_then_the_stream_finishes_whole(
    aio: Any, http: httpx.AsyncClient, key: str
):
    got = await streamed(aio, "quick-stall", key)
    assert got.error is None
    assert text_of(got.chunks) == "one two three four"
    assert finish_of(got.chunks[-1]) == "STOP"
    [entry] = await settled_journal(http, key)
    assert (entry.outcome, entry.chunks_sent) == ("fault", len(got.chunks))
    assert entry.fault == "stall 0.3s after 2 chunks"


# --- the request: the journal, turns, side calls, extract steps ----------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_the_journal_says_the_gemini_api_was_used(
    aio: Any, http: httpx.AsyncClient, key: str, stream: bool
):
    if stream:
        sent = len((await streamed(aio, "clean", key)).chunks)
        method = "streamGenerateContent"
    else:
        await whole(aio, "clean", key)
        sent, method = 0, "generateContent"
    [entry] = await settled_journal(http, key)
    assert (entry.path, entry.api) == (f"/v1beta/models/{MODEL}:{method}", "gemini")
    assert (entry.flow, entry.outcome) == ("clean", "completed")
    assert (entry.stream, entry.status, entry.chunks_sent) == (stream, 200, sent)
    assert entry.body["contents"] == [{"parts": [{"text": ask("clean", key)}], "role": "user"}]


def read_tool() -> types.Tool:
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
    return types.Tool(
        function_declarations=[
            types.FunctionDeclaration(name="read", parameters_json_schema=parameters)
        ]
    )


async def test_a_tool_round_sends_the_call_back_with_its_response(
    aio: Any, http: httpx.AsyncClient, key: str
):
    config = types.GenerateContentConfig(system_instruction="Use the tools.", tools=[read_tool()])
    question = types.Content(role="user", parts=[types.Part(text=ask("tool-then-answer", key))])
    first = await aio.models.generate_content(model=MODEL, contents=[question], config=config)
    [call] = first.function_calls or []
    assert (call.name, call.args) == ("read", {"path": "/homelab/backup-notes.md"})
    assert first.candidates
    assert first.candidates[0].content
    answer = types.Part.from_function_response(name="read", response={"output": "Nightly."})
    history = [question, first.candidates[0].content, types.Content(role="tool", parts=[answer])]
    second = await aio.models.generate_content(model=MODEL, contents=history, config=config)
    assert text_of([second]) == FLOWS["tool-then-answer"].steps[1].content
    entries = await settled_journal(http, key, count=2)
    assert [e.request_in_turn for e in entries] == [1, 2]


async def test_an_extract_step_reads_the_note_then_quotes_the_tool_result(
    aio: Any, http: httpx.AsyncClient, key: str
):
    flow = f"ex-gem-{key}"
    flows = f"flows:\n  {flow}:\n    steps:\n      - {{extract: {{sentences: 1, read: read}}}}\n"
    assert (await http.post("/_mock/flows", content=flows)).status_code == 200
    note = '<excerpt path="/homelab/ups.md">The UPS sits in the rack.</excerpt>'
    config = types.GenerateContentConfig(
        system_instruction=f"Answer from the notes.\n{note}", tools=[read_tool()]
    )
    text = f"How long does the UPS hold? [[mock:{flow}#{key}]]"
    question = types.Content(role="user", parts=[types.Part(text=text)])
    first = await aio.models.generate_content(model=MODEL, contents=[question], config=config)
    [call] = first.function_calls or []
    assert (call.name, call.args) == ("read", {"path": "/homelab/ups.md"})
    assert first.candidates
    assert first.candidates[0].content
    result = types.Part.from_function_response(
        name="read", response={"output": "The UPS holds the rack for 40 minutes."}
    )
    history = [question, first.candidates[0].content, types.Content(role="tool", parts=[result])]
    chunks: list[types.GenerateContentResponse] = []
    async with asyncio.timeout(DEADLINE_S):
        stream = await aio.models.generate_content_stream(
            model=MODEL, contents=history, config=config
        )
        chunks = [chunk async for chunk in stream]
    assert text_of(chunks) == (
        "From the notes:\n- The UPS holds the rack for 40 minutes. (source: /homelab/ups.md)"
    )


async def test_a_title_call_between_two_requests_is_a_side_call_outside_the_turn(
    aio: Any, http: httpx.AsyncClient, key: str
):
    with pytest.raises(errors.ServerError):
        await whole(aio, "error-then-ok", key)
    title = await aio.models.generate_content(
        model=MODEL, contents=f"### Task: Generate a title.\nUSER: {ask('error-then-ok', key)}"
    )
    second = await whole(aio, "error-then-ok", key)
    assert text_of([title]) == FLOWS["side-call"].steps[0].content
    assert text_of([second]) == FLOWS["error-then-ok"].steps[1].content
    entries = await settled_journal(http, key, count=3)
    assert [(e.side_call, e.request_in_turn) for e in entries] == [
        (False, 1),
        (True, None),
        (False, 2),
    ]


# --- refusals, in Google's error shape -----------------------------------------------------


async def test_a_bad_role_is_a_client_error_400_naming_the_field(aio: Any, key: str):
    robot = types.Content(role="robot", parts=[types.Part(text=ask("clean", key))])
    with pytest.raises(errors.ClientError) as caught:
        await aio.models.generate_content(model=MODEL, contents=[robot])
    assert (caught.value.code, caught.value.status) == (400, "INVALID_ARGUMENT")
    assert "got 'robot'" in (caught.value.message or "")
    [detail] = details(caught.value)
    assert detail["fieldViolations"][0]["field"] == "contents[0].role"


async def test_an_unknown_flow_is_a_client_error_400_listing_the_flows(
    aio: Any, http: httpx.AsyncClient, key: str
):
    got = await streamed(aio, "no-such-flow", key)
    assert isinstance(got.error, errors.ClientError)
    assert (got.error.code, got.error.status) == (400, "INVALID_ARGUMENT")
    assert "scaffold-recover" in (got.error.message or "")
    [entry] = await settled_journal(http, key)
    path = f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert (entry.path, entry.outcome, entry.status) == (path, "rejected", 400)


def google_error(response: httpx.Response, status: int, name: str) -> dict[str, Any]:
    """The body of a refusal in Google's shape, its message bounded."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (status, name)
    assert 0 < len(error["message"]) <= MAX_ERROR_MESSAGE_CHARS
    return error


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[" * 5000 + b"]" * 5000, "nests deeper"),
        (b'{"contents": 7}', "must be a list"),
        (
            json.dumps(
                {"contents": [{"role": "r" * 2_000_000, "parts": [{"text": "x"}]}]}
            ).encode(),
            "role",
        ),
        (json.dumps({"contents": [{"parts": [{"functionCall": {"name": 3}}]}]}).encode(), "name"),
    ],
    ids=["not-json", "deep", "wrong-type", "huge-role", "bad-call"],
)
async def test_a_hostile_body_is_a_bounded_400_in_googles_shape(
    http: httpx.AsyncClient, content: bytes, fragment: str
):
    reply = await http.post(f"/v1beta/models/{MODEL}:streamGenerateContent", content=content)
    assert fragment in google_error(reply, 400, "INVALID_ARGUMENT")["message"]


async def test_an_unknown_method_is_not_found_in_googles_shape(http: httpx.AsyncClient, key: str):
    body = {"contents": [{"parts": [{"text": ask("clean", key)}]}]}
    reply = await http.post(f"/v1beta/models/{MODEL}:countTokens", json=body)
    assert "countTokens" in google_error(reply, 404, "NOT_FOUND")["message"]


async def test_a_bad_alt_is_a_400_naming_it(http: httpx.AsyncClient, key: str):
    body = {"contents": [{"parts": [{"text": ask("clean", key)}]}]}
    reply = await http.post(f"/v1beta/models/{MODEL}:streamGenerateContent?alt=proto", json=body)
    error = google_error(reply, 400, "INVALID_ARGUMENT")
    assert error["details"][0]["fieldViolations"][0]["field"] == "alt"


async def test_a_body_over_the_limit_is_a_413_in_googles_shape():
    with serve_mock(build_settings(max_body_bytes=1000)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as http:
            body = {"contents": [{"parts": [{"text": "x" * 2000}]}]}
            reply = await http.post(f"/v1beta/models/{MODEL}:generateContent", json=body)
    assert "larger than 1000 bytes" in google_error(reply, 413, "INVALID_ARGUMENT")["message"]


# --- the default framing: one JSON array, read the way Google reads it ---------------------


class JsonArrayReader:
    """A streamed JSON array read as Google's REST streaming iterator reads it: the body
    opens with `[`; each top-level object is complete at the brace that closes it (braces
    inside strings, escaped quotes included, do not count); whitespace and commas between
    objects are skipped; `]` closes the array. Objects are handed out as they complete."""

    def __init__(self) -> None:
        self.opened = False
        self.closed = False
        self.depth = 0  # inside an object: how deep
        self.in_string = False
        self.escaped = False
        self.current: list[str] = []

    def feed(self, text: str) -> list[dict[str, Any]]:
        done: list[dict[str, Any]] = []
        for char in text:
            if self.depth:
                self._object_char(char, done)
            elif not self.opened:
                if char != "[":
                    raise ValueError(f"a streamed array opens with '[', not {char!r}")
                self.opened = True
            elif self.closed or char == "]":
                if not char.isspace() and self.closed:
                    raise ValueError(f"{char!r} after the array's end")
                self.closed = True
            elif char == "{":
                self.depth, self.current = 1, [char]
            elif not (char.isspace() or char == ","):
                raise ValueError(f"{char!r} between two elements")
        return done

    def _object_char(self, char: str, done: list[dict[str, Any]]) -> None:
        self.current.append(char)
        if self.in_string:
            if self.escaped:
                self.escaped = False
            elif char == "\\":
                self.escaped = True
            elif char == '"':
                self.in_string = False
        elif char == '"':
            self.in_string = True
        elif char in "{[":
            self.depth += 1
        elif char in "}]":
            self.depth -= 1
            if not self.depth:
                done.append(json.loads("".join(self.current)))

    def finish(self) -> None:
        if not self.closed:
            raise ValueError("the stream ended inside the array")


@dataclass
class ArrayRead:
    elements: list[dict[str, Any]]
    content_type: str


async def read_array(
    http: httpx.AsyncClient, flow: str, key: str, *, stop_after: int | None = None
) -> ArrayRead:
    """A streamGenerateContent without `alt`, read element by element (and left after
    `stop_after` elements, when given)."""
    reader = JsonArrayReader()
    elements: list[dict[str, Any]] = []
    body = {"contents": [{"role": "user", "parts": [{"text": ask(flow, key)}]}]}
    path = f"/v1beta/models/{MODEL}:streamGenerateContent"
    async with asyncio.timeout(DEADLINE_S), http.stream("POST", path, json=body) as reply:
        assert reply.status_code == 200
        async for text in reply.aiter_text():
            elements += reader.feed(text)
            if stop_after is not None and len(elements) >= stop_after:
                return ArrayRead(elements, reply.headers["content-type"])
        reader.finish()
        return ArrayRead(elements, reply.headers["content-type"])


def element_parts(elements: list[dict[str, Any]]) -> list[types.GenerateContentResponse]:
    return [types.GenerateContentResponse.model_validate(e) for e in elements]


def without_response_id(chunk: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in chunk.items() if k != "responseId"}


async def sse_elements(http: httpx.AsyncClient, flow: str, key: str) -> list[dict[str, Any]]:
    body = {"contents": [{"role": "user", "parts": [{"text": ask(flow, key)}]}]}
    path = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    reply = await http.post(path, json=body)
    return [
        json.loads(line.removeprefix("data: "))
        for line in reply.text.split("\r\n")
        if line.startswith("data: ")
    ]


@pytest.mark.parametrize("flow", SAMPLED)
async def test_the_default_stream_is_a_json_array_with_the_sse_streams_chunks(
    http: httpx.AsyncClient, key: str, flow: str
):
    step = FLOWS[flow].steps[0]
    read = await read_array(http, flow, f"{key}-a")
    assert read.content_type == "application/json"
    chunks = element_parts(read.elements)
    assert (text_of(chunks), text_of(chunks, thought=True)) == (step.content, step.reasoning)
    assert calls_of(chunks) == [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
    events = await sse_elements(http, flow, f"{key}-e")
    assert [without_response_id(e) for e in read.elements] == [
        without_response_id(e) for e in events
    ]


async def test_a_json_array_stream_is_read_element_by_element_before_it_ends(
    http: httpx.AsyncClient, key: str
):
    read = await read_array(http, "slow", key, stop_after=3)
    assert len(read.elements) == 3
    assert FLOWS["slow"].steps[0].content.startswith(text_of(element_parts(read.elements)))
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


async def test_an_in_band_error_is_the_last_element_of_a_closed_array(
    http: httpx.AsyncClient, key: str
):
    read = await read_array(http, "error-event", key)
    *chunks, error = read.elements
    assert error == {
        "error": {"code": 500, "message": "The model crashed (mock fault).", "status": "INTERNAL"}
    }
    assert FLOWS["error-event"].steps[0].content.startswith(text_of(element_parts(chunks)))


async def test_a_clean_eof_leaves_the_array_unclosed(http: httpx.AsyncClient, key: str):
    with pytest.raises(ValueError, match="ended inside the array"):
        await read_array(http, "cut-eof", key)


async def test_a_malformed_line_breaks_the_array(http: httpx.AsyncClient, key: str):
    with pytest.raises(json.JSONDecodeError):
        await read_array(http, "malformed-sse", key)
