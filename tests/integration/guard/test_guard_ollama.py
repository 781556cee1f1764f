"""The guard proxy's Ollama front door, with the mock as the upstream and the official
ollama client as the client.

One built-in flow of each outcome class (played_flows.SAMPLED; every flow is replayed through
the route's guard, both APIs, in tests/unit/guard/test_guard_ollama.py) is one turn through the
proxy's /api/chat, streamed and whole: a flow with an `expect` block reaches the client as
that block says (the text shown, the recovery with its corrected request, the malformed
reply error, the stripped count in the proxy's log; a tool round is answered as a client
would, with a second request), any other exactly as it reaches the client straight from
the mock. /api/generate is played through a small generate front over the mock's chat API.
Clean, thinking and tool-call streams go out byte for byte; faults come back in Ollama's
shape; the other /api/ paths pass through, NDJSON progress streams included; the client's
key goes upstream and into no log. `python -m guard --upstream-ollama URL` runs as a
process, serving both APIs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from guard.cli import main, upstream_root
from guard.http.server import GuardSettings, create_app
from guard.transport import AsyncGuardTransport
from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY
from servekit.in_thread import serve_in_thread

from ...support.deadlines import DEADLINE_S
from ...support.families import hidden_canary
from ...support.journal import settled_journal
from ...support.ollama_generate import as_generate, as_generate_line
from ...support.ports import refusing_port
from ...support.processes import guard_process
from ...support.servers import serve_guard
from ..conftest import GUARD_WAYS, guard_url
from ..helpers.pass_through import assert_passed_on_as_is
from ..helpers.played_flows import FLOWS, SAMPLED
from ..helpers.recovery import (
    RECOVERY_CUT,
    RECOVERY_FAULTS,
    RECOVERY_REFUSED,
    SYSTEM,
    add_flows,
    assert_chat_recovery,
)

CREATED_AT = re.compile(rb'"created_at":"[^"]*"')
CUT_OFF = "The model's reply was cut off."
TOOL_RESULT = "# Backups\nNightly at 02:00 with restic."


@pytest.fixture(scope="module")
def proxy_url(mock_url: str) -> Iterator[str]:
    with serve_guard(mock_url) as url:
        yield url


@pytest.fixture(params=GUARD_WAYS)
async def client(
    request: pytest.FixtureRequest, mock_url: str
) -> AsyncIterator[ollama.AsyncClient]:
    url, guarded = guard_url(request, mock_url)
    transport = AsyncGuardTransport() if guarded else None
    async with ollama.AsyncClient(host=url, timeout=DEADLINE_S, transport=transport) as client:
        yield client


@pytest.fixture
async def direct(mock_url: str) -> AsyncIterator[ollama.AsyncClient]:
    async with ollama.AsyncClient(host=mock_url, timeout=DEADLINE_S) as client:
        yield client


def ask(flow: str, key: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"},
    ]


def calls_of(message: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c.function.name, dict(c.function.arguments)) for c in message.tool_calls or []]


async def one_request(
    client: ollama.AsyncClient, messages: list[dict[str, Any]], *, stream: bool
) -> dict[str, Any]:
    """What the client makes of one /api/chat answer: text, thinking, tool calls, the end."""
    if not stream:
        whole = await client.chat(model="m", messages=messages, stream=False)
        return {
            "text": whole.message.content or "",
            "thinking": whole.message.thinking or "",
            "calls": calls_of(whole.message),
            "done": [whole.done_reason],
        }
    text, thinking, calls, done = [], [], [], []
    async with asyncio.timeout(DEADLINE_S):
        async for part in await client.chat(model="m", messages=messages, stream=True):
            text.append(part.message.content or "")
            thinking.append(part.message.thinking or "")
            calls += calls_of(part.message)
            if part.done:
                done.append(part.done_reason)
    return {"text": "".join(text), "thinking": "".join(thinking), "calls": calls, "done": done}


async def turn(
    client: ollama.AsyncClient, flow: str, key: str, *, stream: bool
) -> tuple[str, dict[str, Any]]:
    """A whole turn as a chat client plays it: a tool call is answered and asked again."""
    messages = ask(flow, key)
    first = await one_request(client, messages, stream=stream)
    if not first["calls"]:
        return first["text"], first
    assistant = {
        "role": "assistant",
        "content": first["text"],
        "tool_calls": [
            {"function": {"name": name, "arguments": arguments}}
            for name, arguments in first["calls"]
        ],
    }
    results = [{"role": "tool", "content": TOOL_RESULT, "tool_name": n} for n, _ in first["calls"]]
    second = await one_request(client, [*messages, assistant, *results], stream=stream)
    return first["text"] + second["text"], first


def logged(caplog: pytest.LogCaptureFixture, route: str = "ollama-chat") -> list[int]:
    found = re.findall(rf"guard: {route} status=\d+ .* scaffold_stripped=(\d+)", caplog.text)
    return [int(n) for n in found]


# --- the contract, flow by flow, on /api/chat -----------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", SAMPLED)
async def test_each_flow_reaches_the_ollama_client_as_its_expect_block_says(
    client: ollama.AsyncClient,
    direct: ollama.AsyncClient,
    http: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
    name: str,
    stream: bool,
):
    caplog.set_level(logging.INFO, logger="guard")
    flow = FLOWS[name]
    expect = flow.expect_for("m")  # the proxy's default, auto, judges by the model asked for
    if expect is None:  # not a guardrail flow: the client gets what the mock sends
        proxied = await turn(client, name, f"{key}-p", stream=stream)
        straight = await turn(direct, name, f"{key}-d", stream=stream)
        assert proxied == straight
        assert logged(caplog)
        assert set(logged(caplog)) == {0}
        return
    if expect.error == "malformed":
        with pytest.raises(ollama.ResponseError) as caught:
            await turn(client, name, key, stream=stream)
        assert caught.value.error == MALFORMED_REPLY
        if not stream:
            assert caught.value.status_code == 502
    else:
        shown, first = await turn(client, name, key, stream=stream)
        assert shown == expect.shown
        assert len(first["done"]) == 1  # one done line, the recovery's when there was one
        if canary := hidden_canary(flow, "m"):
            assert canary not in shown
    entries = await settled_journal(http, key, count=expect.requests)
    assert len(entries) == expect.requests
    assert sum(logged(caplog)) == expect.stripped_chars
    if expect.recovery:
        assert_chat_recovery(entries, SYSTEM)


async def test_a_recovered_stream_is_one_stream_with_one_done_line(proxy_url: str, key: str):
    body = {"model": "m", "messages": ask("scaffold-split", key)}  # streamed by default
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        reply = await http.post(f"{proxy_url}/api/chat", json=body)
    assert reply.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in reply.text.splitlines()]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    expect = FLOWS["scaffold-split"].expect
    assert expect is not None
    assert "".join(line["message"]["content"] for line in lines) == expect.shown
    assert lines[-1]["done_reason"] == "stop"


# --- byte for byte --------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(
    "name", ["clean", "thinking", "thinking-scaffold", "tool-then-answer", "multi-tool", "length"]
)
async def test_what_the_guardrail_leaves_alone_goes_out_byte_for_byte(
    proxy_url: str, mock_url: str, key: str, name: str, stream: bool
):
    def body(turn: str) -> dict[str, Any]:
        return {"model": "m", "stream": stream, "messages": ask(name, turn)}

    await assert_passed_on_as_is((mock_url, proxy_url), "/api/chat", body, key, CREATED_AT)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_line_that_is_not_json_reaches_the_client_as_it_reaches_it_directly(
    proxy_url: str, mock_url: str, key: str, stream: bool
):
    def body(turn: str) -> dict[str, Any]:
        return {"model": "m", "stream": stream, "messages": ask("malformed-sse", turn)}

    await assert_passed_on_as_is((mock_url, proxy_url), "/api/chat", body, key, CREATED_AT)


# --- faults --------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_rate_limit_passes_through_with_its_retry_after(
    proxy_url: str, key: str, stream: bool
):
    body = {"model": "m", "stream": stream, "messages": ask("rate-limited", key)}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        reply = await http.post(f"{proxy_url}/api/chat", json=body)
    assert reply.status_code == 429
    assert reply.headers["retry-after"] == "1"
    assert "Rate limit reached" in reply.json()["error"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_server_error_reaches_the_client_as_ollamas_error(
    client: ollama.AsyncClient, key: str, stream: bool
):
    with pytest.raises(ollama.ResponseError) as caught:
        await one_request(client, ask("error-then-ok", key), stream=stream)
    assert caught.value.status_code == 503


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_an_upstream_error_line_or_body_passes_on_as_it_came(
    client: ollama.AsyncClient, key: str, stream: bool
):
    with pytest.raises(ollama.ResponseError, match="The model crashed"):
        await one_request(client, ask("error-event", key), stream=stream)


@pytest.mark.parametrize(
    ("flow", "stream"),
    [("drop-mid-stream", True), ("drop-mid-stream", False), ("cut-eof", True)],
    ids=["broken-stream", "broken-body", "stream-ended-before-its-done-line"],
)
async def test_a_reply_cut_by_the_upstream_is_an_error_for_the_client(
    client: ollama.AsyncClient, key: str, flow: str, stream: bool
):
    with pytest.raises(ollama.ResponseError) as caught:
        await one_request(client, ask(flow, key), stream=stream)
    assert caught.value.error == CUT_OFF
    if not stream:
        assert caught.value.status_code == 502


async def test_a_stream_that_stays_malformed_is_a_502_before_any_line(proxy_url: str, key: str):
    """Regression: Open WebUI drops an error line in a 200 stream and shows an empty answer;
    an error status it shows as its error box."""
    body = {"model": "m", "messages": ask("scaffold-repeat", key)}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        reply = await http.post(f"{proxy_url}/api/chat", json=body)
    assert reply.status_code == 502
    assert reply.json() == {"error": MALFORMED_REPLY}


async def test_a_stream_cut_after_its_first_lines_keeps_its_200_and_ends_with_the_error_line(
    proxy_url: str, key: str
):
    body = {"model": "m", "messages": ask("drop-mid-stream", key)}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        reply = await http.post(f"{proxy_url}/api/chat", json=body)
    lines = [json.loads(line) for line in reply.text.splitlines()]
    assert reply.status_code == 200
    assert lines[0]["message"]["content"]
    assert lines[-1] == {"error": CUT_OFF}


async def test_an_unreachable_upstream_is_a_502_in_ollamas_shape():
    with refusing_port() as port:
        settings = GuardSettings(upstream=f"http://127.0.0.1:{port}")
        with serve_in_thread(uvicorn.Config(create_app(settings), log_level="warning")) as url:
            async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
                chat = await http.post(f"{url}/api/chat", json={"model": "m", "messages": []})
                generate = await http.post(f"{url}/api/generate", json={"model": "m"})
                tags = await http.get(f"{url}/api/tags")
    for reply in (chat, generate, tags):
        assert reply.status_code == 502
        assert reply.json() == {"error": "The model server could not be reached."}


async def test_a_client_that_leaves_closes_the_upstream_stream(
    proxy_url: str, http: httpx.AsyncClient, key: str
):
    body = {"model": "m", "messages": ask("stall", key)}
    async with (
        asyncio.timeout(DEADLINE_S),
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
        client.stream("POST", f"{proxy_url}/api/chat", json=body) as reply,
    ):
        async for line in reply.aiter_lines():
            if json.loads(line)["message"]["content"]:
                break  # the first words are here; the model goes silent for 30 s next
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


async def test_a_body_that_is_not_a_json_object_is_the_upstreams_to_answer(
    proxy_url: str, mock_url: str
):
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        for body in (b"not json", b"[1, 2]", b"[" * 50_000):
            direct = await http.post(f"{mock_url}/api/chat", content=body)
            proxied = await http.post(f"{proxy_url}/api/chat", content=body)
            assert (proxied.status_code, proxied.content) == (direct.status_code, direct.content)


# --- the recovery's own faults -------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime_flows(mock_url: str) -> None:
    add_flows(mock_url, RECOVERY_FAULTS)


@pytest.mark.usefixtures("runtime_flows")
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_refuses_passes_its_error_on(
    client: ollama.AsyncClient, key: str, stream: bool
):
    with pytest.raises(ollama.ResponseError) as caught:
        await one_request(client, ask(RECOVERY_REFUSED, key), stream=stream)
    assert caught.value.error == "The engine is currently overloaded (mock fault)."
    if not stream:
        assert caught.value.status_code == 503


@pytest.mark.usefixtures("runtime_flows")
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_a_recovery_the_upstream_cuts_is_an_error_for_the_client(
    client: ollama.AsyncClient, key: str, stream: bool
):
    with pytest.raises(ollama.ResponseError) as caught:
        await one_request(client, ask(RECOVERY_CUT, key), stream=stream)
    assert caught.value.error == CUT_OFF


# --- /api/generate, through a generate front over the mock ---------------------------------------


@pytest.fixture(scope="module")
def generate_upstream(mock_url: str) -> Iterator[str]:
    """An Ollama-like upstream whose /api/generate asks the mock's /api/chat (the system
    text as a system message, the prompt as the user's) and answers in generate's shape."""

    async def generate(request: Request) -> Response:
        body = await request.json()
        system = [{"role": "system", "content": body["system"]}] if "system" in body else []
        stream = body.get("stream") is not False
        chat = {
            "model": body["model"],
            "stream": stream,
            "messages": [*system, {"role": "user", "content": body["prompt"]}],
        }
        http = httpx.AsyncClient(timeout=DEADLINE_S)
        reply = await http.send(
            http.build_request("POST", f"{mock_url}/api/chat", json=chat), stream=True
        )
        if reply.status_code >= 300 or not stream:
            answer = json.loads(await reply.aread())
            await reply.aclose()
            await http.aclose()
            return JSONResponse(as_generate(answer), status_code=reply.status_code)

        async def lines() -> AsyncIterator[bytes]:
            try:
                async for line in reply.aiter_lines():
                    yield as_generate_line(line.encode())
            finally:
                await reply.aclose()
                await http.aclose()

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    app = Starlette(routes=[Route("/api/generate", generate, methods=["POST"])])
    with serve_in_thread(uvicorn.Config(app, log_level="warning")) as url:
        yield url


@pytest.fixture(scope="module")
def generate_proxy_url(generate_upstream: str) -> Iterator[str]:
    settings = GuardSettings(upstream=generate_upstream)
    with serve_in_thread(uvicorn.Config(create_app(settings), log_level="warning")) as url:
        yield url


GENERATE_FLOWS = sorted(
    name
    for name in SAMPLED
    if (flow := FLOWS[name]).expect is not None and not flow.steps[0].tool_calls
)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", GENERATE_FLOWS)
async def test_each_flow_reaches_a_generate_client_as_its_expect_block_says(
    generate_proxy_url: str,
    http: httpx.AsyncClient,
    key: str,
    caplog: pytest.LogCaptureFixture,
    name: str,
    stream: bool,
):
    caplog.set_level(logging.INFO, logger="guard")
    expect = FLOWS[name].expect_for("m")
    assert expect is not None
    prompt = f"When do backups run? [[mock:{name}#{key}]]"
    async with ollama.AsyncClient(host=generate_proxy_url, timeout=DEADLINE_S) as client:

        async def shown() -> str:
            if not stream:
                answer = await client.generate(model="m", prompt=prompt, system=SYSTEM)
                return answer.response
            parts: list[str] = []
            async with asyncio.timeout(DEADLINE_S):
                async for part in await client.generate(
                    model="m", prompt=prompt, system=SYSTEM, stream=True
                ):
                    parts.append(part.response)
            return "".join(parts)

        if expect.error == "malformed":
            with pytest.raises(ollama.ResponseError) as caught:
                await shown()
            assert caught.value.error == MALFORMED_REPLY
        else:
            assert await shown() == expect.shown
    entries = await settled_journal(http, key, count=expect.requests)
    assert len(entries) == expect.requests
    assert logged(caplog, "ollama-generate") == [expect.stripped_chars]
    if (
        expect.recovery
    ):  # the correction went into `system`, which the front made the system message
        assert entries[1].body["messages"][0] == {
            "role": "system",
            "content": f"{SYSTEM}\n\n{CORRECTION_INSTRUCTION}",
        }


async def test_generates_thinking_is_never_filtered(generate_proxy_url: str, key: str):
    prompt = f"When? [[mock:thinking-scaffold#{key}]]"
    async with ollama.AsyncClient(host=generate_proxy_url, timeout=DEADLINE_S) as client:
        thinking = [
            part.thinking or ""
            async for part in await client.generate(model="m", prompt=prompt, stream=True)
        ]
    assert "".join(thinking) == FLOWS["thinking-scaffold"].steps[0].reasoning


# --- the other paths, and the client's key -------------------------------------------------------


async def test_the_model_list_version_and_unknown_paths_pass_through(
    client: ollama.AsyncClient, proxy_url: str, mock_url: str
):
    listing = await client.list()
    assert [m.model for m in listing.models] == ["mock-llm"]
    async with httpx.AsyncClient(timeout=DEADLINE_S) as http:
        for method, path, body in [
            ("GET", "/api/version", None),
            ("GET", "/api/tags", None),
            ("POST", "/api/show", {"model": "mock-llm"}),
            ("GET", "/api/ps", None),
            ("POST", "/api/embed", {"model": "mock-llm", "input": "x"}),
        ]:
            straight = await http.request(method, f"{mock_url}{path}", json=body)
            proxied = await http.request(method, f"{proxy_url}{path}", json=body)
            assert (proxied.status_code, proxied.content) == (
                straight.status_code,
                straight.content,
            ), path


PULL = [
    {"status": "pulling manifest"},
    {"status": "pulling 1a2b", "digest": "sha256:1a2b", "total": 100, "completed": 40},
    {"status": "pulling 1a2b", "digest": "sha256:1a2b", "total": 100, "completed": 100},
    {"status": "success"},
]


@pytest.fixture(scope="module")
def echo_upstream() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """An Ollama-like upstream that records each request's headers: a clean /api/chat
    answer, and /api/pull as an NDJSON progress stream, a line at a time."""
    seen: list[dict[str, str]] = []

    async def chat(request: Request) -> JSONResponse:
        seen.append(dict(request.headers))
        message = {"role": "assistant", "content": "Backups run nightly."}
        return JSONResponse({"model": "m", "message": message, "done": True})

    async def pull(request: Request) -> StreamingResponse:
        seen.append(dict(request.headers))

        async def lines() -> AsyncIterator[bytes]:
            for line in PULL:
                yield json.dumps(line).encode() + b"\n"
                await asyncio.sleep(0)

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    app = Starlette(
        routes=[
            Route("/api/chat", chat, methods=["POST"]),
            Route("/api/pull", pull, methods=["POST"]),
        ]
    )
    with serve_in_thread(uvicorn.Config(app, log_level="warning")) as url:
        yield url, seen


async def test_a_pull_streams_its_progress_through(
    echo_upstream: tuple[str, list[dict[str, str]]],
):
    upstream, _ = echo_upstream
    with serve_guard(upstream) as url:
        async with ollama.AsyncClient(host=url, timeout=DEADLINE_S) as client:
            progress = [
                (part.status, part.completed)
                async for part in await client.pull("mock-llm", stream=True)
            ]
    assert progress == [(line["status"], line.get("completed")) for line in PULL]


async def test_the_clients_api_key_goes_upstream_and_never_into_a_log(
    echo_upstream: tuple[str, list[dict[str, str]]], caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)
    upstream, seen = echo_upstream
    headers = {"Authorization": "Bearer sk-secret-4711"}
    with serve_guard(upstream) as url:
        async with ollama.AsyncClient(host=url, timeout=DEADLINE_S, headers=headers) as client:
            answer = await client.chat(model="m", messages=[{"role": "user", "content": "hi"}])
    assert answer.message.content == "Backups run nightly."
    assert seen[-1]["authorization"] == "Bearer sk-secret-4711"
    assert seen[-1]["accept-encoding"] == "identity"  # the proxy reads the answer
    assert "guard: ollama-chat status=200 stream=false retries=0" in caplog.text
    assert "sk-secret-4711" not in caplog.text


# --- python -m guard --upstream-ollama ------------------------------------------------------------

STARTED = re.compile(r"guard: proxy on (http://127\.0\.0\.1:\d+) for Ollama at (\S+)")


def test_the_proxy_started_for_ollama_serves_both_apis_and_stops_cleanly(
    tmp_path: Path, mock_url: str
):
    with guard_process(tmp_path, "--upstream-ollama", f"{mock_url}/api/") as guard:
        started = STARTED.match(guard.line)
        assert started
        assert started.group(2) == mock_url  # the root: the client's /api path is kept
        message = "When do backups run? [[mock:scaffold-recover#guard-ollama-cli]]"
        with ollama.Client(host=started.group(1), timeout=DEADLINE_S) as client:
            answer = client.chat(model="m", messages=[{"role": "user", "content": message}])
        assert (answer.message.content or "").startswith("Backups run nightly")
        openai_reply = httpx.post(
            f"{started.group(1)}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "[[mock:clean]]"}]},
            timeout=DEADLINE_S,
        )
        assert openai_reply.json()["choices"][0]["message"]["content"].startswith("Backups")
    assert guard.process.returncode in (0, -signal.SIGTERM), guard.stderr
    assert "Traceback" not in guard.stderr
    assert "guard: ollama-chat status=200 stream=false retries=1" in guard.stderr
    assert "agent: stripped 97 chars of tool-scaffolding in round 1" in guard.stderr
    assert "guard: chat status=200 stream=false retries=0" in guard.stderr


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (
            ["--upstream", "http://127.0.0.1:9/v1", "--upstream-ollama", "http://127.0.0.1:9"],
            "not allowed with argument",
        ),
        ([], "one of the arguments --upstream --upstream-ollama is required"),
    ],
    ids=["both", "neither"],
)
def test_exactly_one_upstream_option_is_given(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
):
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--port", "0"])
    assert stopped.value.code == 2
    assert complaint in capsys.readouterr().err


def test_an_ollama_upstream_that_is_not_http_stops_the_start(capsys: pytest.CaptureFixture[str]):
    assert main(["--upstream-ollama", "127.0.0.1:11434", "--port", "0"]) == 2
    assert "--upstream-ollama must be an http(s) URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "root"),
    [
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("http://127.0.0.1:11434/", "http://127.0.0.1:11434"),
        ("http://127.0.0.1:11434/api", "http://127.0.0.1:11434"),
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434"),
        ("https://llm.lan/ollama/api/", "https://llm.lan/ollama"),
        ("ftp://llm.lan", None),
    ],
)
def test_an_ollama_upstream_is_taken_at_its_root(given: str, root: str | None):
    assert upstream_root(given, ollama=True) == root
