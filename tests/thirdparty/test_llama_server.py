"""The guard in front of llama.cpp's real llama-server and a real model (SmolLM2-135M).

The build is cached once per machine (`uv run python -m tests.thirdparty.venvs
llama-server`, tests/thirdparty/llama_build.py); without it every test here errors with
that command. The server runs greedy from a fixed seed (tests/thirdparty/llama_server.py),
and a byte tap (tests/thirdparty/byte_tap.py) between the guard and the server keeps what
the server really sent, so the guard's answer is compared with the server's own bytes, not
with a second request's: a clean answer, streamed and whole, reaches the client exactly as
the server wrote it (its `timings`, its usage, its error answers included); the server
closing kept-alive connections loses no turn; a client that leaves stops the server's
generation; the leak the real model writes (its own tool-call markup in the answer,
token by token) never reaches the client; and where the server splits the model's reasoning
into `reasoning_content` (a second server, with a chat template that marks reasoning), the
reasoning reaches the client as the server wrote it, the model's call markup in it included
(G9: reasoning is never filtered).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from guardrail.policy import CORRECTION_INSTRUCTION
from mock_llm import build_settings, serve_mock
from mock_llm.record.recorder import RecorderSettings, Upstream, serve_recorder

from ..support.deadlines import DEADLINE_S, POLL_S
from ..support.servers import app_settings, serve_app, serve_guard
from .byte_tap import Exchange, Tap, tapping
from .llama_server import serve_llama_server
from .real_leak import (
    CLEAN_QUESTION,
    LEAK_MESSAGES,
    LEAK_TEXT,
    REASONED_LEAK_MESSAGES,
    THINKING_SERVER_ARGS,
)

pytestmark = pytest.mark.timeout(600)

GENERATION_S = 120.0
"""A hang guard for one generation by the real model (a few seconds here)."""
THINK_TAGS = Path(__file__).parent / "templates" / "think_tags.jinja"


@dataclass(frozen=True)
class Guarded:
    """A llama-server behind a byte tap, and the guard in front of the tap."""

    tap: Tap
    url: str  # the guard's


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_llama_server(tmp_path_factory.mktemp("llama-server")) as url:
        yield url


@contextmanager
def guarded(llama_url: str) -> Generator[Guarded]:
    """A byte tap in front of the llama-server at `llama_url`, and the guard in front of it."""
    with (
        tapping(int(llama_url.rsplit(":", 1)[1])) as tap,
        serve_guard(f"http://127.0.0.1:{tap.port}") as guard_url,
    ):
        yield Guarded(tap, guard_url)


@pytest.fixture(scope="module")
def plain(llama_url: str) -> Iterator[Guarded]:
    with guarded(llama_url) as stack:
        yield stack


@pytest.fixture(scope="module")
def tap(plain: Guarded) -> Tap:
    return plain.tap


@pytest.fixture(scope="module")
def guard_url(plain: Guarded) -> str:
    return plain.url


@pytest.fixture(scope="module")
def thinking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    """A second llama-server, one that splits the model's reasoning into
    `reasoning_content`, behind a tap and a guard of its own."""
    workdir = tmp_path_factory.mktemp("thinking-server")
    with (
        serve_llama_server(workdir, *THINKING_SERVER_ARGS, str(THINK_TAGS)) as url,
        guarded(url) as stack,
    ):
        yield stack


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=GENERATION_S) as client:
        yield client


def chat(messages: list[dict[str, str]], *, stream: bool, **extra: Any) -> dict[str, Any]:
    return {"model": "smollm2", "messages": messages, "stream": stream, "temperature": 0,
            "seed": 42, "max_tokens": 64, **extra}  # fmt: skip


def new_exchanges(tap: Tap, before: int, count: int) -> list[Exchange]:
    """The `count` exchanges the tap saw since it had `before`, once all have ended: the
    client may have its whole answer before the server's last bytes (the chunked body's
    end) reach the tap, since the guard ends its own answer at `data: [DONE]`."""
    deadline = time.monotonic() + DEADLINE_S
    new = tap.exchanges()[before:]
    while len(new) < count and time.monotonic() < deadline:
        time.sleep(POLL_S)
        new = tap.exchanges()[before:]
    assert len(new) == count, [(e.target, e.status) for e in new]
    return new


def last_exchange(tap: Tap, before: int) -> Exchange:
    """The one exchange the tap saw since it had `before`."""
    return new_exchanges(tap, before, 1)[0]


def events(body: bytes) -> list[dict[str, Any]]:
    lines = body.decode().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def content_of(body: bytes, field: str = "content") -> str:
    """The text of a stream's deltas' `field` (`content`, or `reasoning_content`)."""
    return "".join(
        choice["delta"].get(field) or ""
        for event in events(body)
        for choice in event.get("choices", [])
    )


@pytest.mark.parametrize(
    ("stream", "usage"), [(True, False), (True, True), (False, False)],
    ids=["stream", "stream-with-usage", "whole"],
)  # fmt: skip
def test_a_clean_answer_reaches_the_client_as_the_server_wrote_it(
    client: httpx.Client, guard_url: str, tap: Tap, stream: bool, usage: bool
):
    before = len(tap.exchanges())
    question = [{"role": "user", "content": CLEAN_QUESTION}]
    extra = {"stream_options": {"include_usage": True}} if usage else {}
    body = chat(question, stream=stream, **extra)
    answer = client.post(f"{guard_url}/v1/chat/completions", json=body)
    server = last_exchange(tap, before)
    assert (answer.status_code, server.status) == (200, 200)
    assert answer.content == server.body
    if stream:
        assert content_of(answer.content).strip()
        assert any("timings" in event for event in events(answer.content))
        usage_chunks = [e for e in events(answer.content) if e.get("usage") and not e["choices"]]
        assert len(usage_chunks) == usage
    else:
        whole = answer.json()
        assert whole["choices"][0]["message"]["content"].strip()
        assert "timings" in whole
        assert "usage" in whole


def test_an_error_the_server_answers_reaches_the_client_unchanged(
    client: httpx.Client, guard_url: str, tap: Tap
):
    before = len(tap.exchanges())
    too_long = [{"role": "user", "content": "backup " * 6000}]  # past the 4,096-token context
    answer = client.post(f"{guard_url}/v1/chat/completions", json=chat(too_long, stream=True))
    server = last_exchange(tap, before)
    assert server.status >= 400
    assert (answer.status_code, answer.content) == (server.status, server.body)


def test_a_server_that_closes_kept_alive_connections_loses_no_turn(
    client: httpx.Client, guard_url: str, tap: Tap
):
    closed_before = tap.closed_by_upstream()
    question = [{"role": "user", "content": CLEAN_QUESTION}]
    answers = [
        client.post(f"{guard_url}/v1/chat/completions", json=chat(question, stream=i % 2 == 0))
        for i in range(12)
    ]
    assert [a.status_code for a in answers] == [200] * 12
    shown = [content_of(a.content) if i % 2 == 0 else a.json()["choices"][0]["message"]["content"]
             for i, a in enumerate(answers)]  # fmt: skip
    assert all(text.strip() for text in shown)
    # llama-server closes a kept-alive connection after a whole answer: the race was run
    assert tap.closed_by_upstream() > closed_before


def test_a_client_that_leaves_stops_the_servers_generation(
    guard_url: str, llama_url: str, client: httpx.Client
):
    story = [{"role": "user", "content": "Write a very long story about a lighthouse keeper."}]
    body = chat(story, stream=True, max_tokens=4000)
    with client.stream("POST", f"{guard_url}/v1/chat/completions", json=body) as answer:
        for _ in zip(range(5), answer.iter_lines(), strict=False):
            pass
    assert _slot_goes_idle(client, llama_url), "the server kept generating for a client gone"


def _slot_goes_idle(client: httpx.Client, llama_url: str) -> bool:
    """Whether llama-server's one slot stops processing (its /slots) within the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        slots = client.get(f"{llama_url}/slots").json()
        if not any(slot.get("is_processing") for slot in slots):
            return True
        time.sleep(POLL_S)
    return False


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_the_real_models_leak_never_reaches_the_client(
    client: httpx.Client,
    guard_url: str,
    tap: Tap,
    stream: bool,
    caplog: pytest.LogCaptureFixture,
):
    before = len(tap.exchanges())
    with caplog.at_level(logging.WARNING, logger="guard"):
        answer = client.post(f"{guard_url}/v1/chat/completions",
                             json=chat(LEAK_MESSAGES, stream=stream))  # fmt: skip
    asked = new_exchanges(tap, before, 2)  # the round and the one recovery
    first = asked[0].body
    wrote = content_of(first) if stream else json.loads(first)["choices"][0]["message"]["content"]
    assert LEAK_TEXT in wrote, "the real model did not write its markup this time"
    shown = content_of(answer.content) if stream else answer.text
    assert "<|tool_call" not in shown
    assert "read(path=" not in shown
    recovery = json.loads(asked[1].request_body)
    assert CORRECTION_INSTRUCTION in recovery["messages"][0]["content"]
    assert any("stripped" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_the_servers_reasoning_reaches_the_client_unfiltered_the_models_markup_and_all(
    client: httpx.Client, thinking: Guarded, stream: bool
):
    before = len(thinking.tap.exchanges())
    body = chat(REASONED_LEAK_MESSAGES, stream=stream)
    answer = client.post(f"{thinking.url}/v1/chat/completions", json=body)
    server = last_exchange(thinking.tap, before)
    assert (answer.status_code, server.status) == (200, 200)
    if stream:
        reasoning = content_of(answer.content, "reasoning_content")
        shown = content_of(answer.content)
    else:
        message = answer.json()["choices"][0]["message"]
        reasoning, shown = message.get("reasoning_content") or "", message["content"]
    assert LEAK_TEXT in reasoning, f"the model wrote no markup in its reasoning: {reasoning!r}"
    assert shown.strip()
    assert "<|tool_call" not in shown
    assert answer.content == server.body  # the reasoning, markup and all, as the server wrote it


@pytest.mark.parametrize("route", ["direct", "guard"])
def test_the_reference_app_answers_a_turn_on_the_real_model(
    route: str, llama_url: str, guard_url: str, tmp_path: Path
):
    model_url = llama_url if route == "direct" else guard_url
    settings = app_settings(model_url, tmp_path, SG_LLM_MODEL="smollm2", SG_LLM_TIMEOUT_S="120")
    with (
        serve_app(settings) as page,
        httpx.stream(
            "POST",
            f"{page}/api/chat",
            json={"message": "When do backups run?"},
            timeout=GENERATION_S,
        ) as answer,
    ):
        frames = [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]
    shown = "".join(frame["text"] for frame in frames if frame["type"] == "delta")
    assert frames[-1]["type"] == "done", frames[-1]
    assert "backup" in shown.lower()  # the real model answered from the retrieved notes
    assert "<|tool_call" not in shown


VARYING = {"id", "created", "model"}
"""Fields whose values differ between any two answers (the mock names the requested model;
the server its model file): compared by presence and place, not value."""


def frame_shape(value: Any, key: str = "") -> Any:
    """A frame as the diff compares it: every key in its order, every text as it is, the
    values of VARYING fields and of the counters (usage, timings) by their type only."""
    if isinstance(value, dict):
        counted = key in ("usage", "timings", "prompt_tokens_details")
        return [(k, type(v).__name__ if counted and not isinstance(v, dict) else
                 frame_shape(v, k)) for k, v in value.items()]  # fmt: skip
    if isinstance(value, list):
        return [frame_shape(item, key) for item in value]
    return type(value).__name__ if key in VARYING else value


def frames_of(body: bytes, stream: bool) -> list[Any]:
    if not stream:
        return [frame_shape(json.loads(body))]
    data = [line[6:] for line in body.decode().split("\n\n") if line.startswith("data: ")]
    return [frame_shape(json.loads(d)) if d.startswith("{") else d for d in data]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_recording_replays_in_the_servers_own_frames_field_by_field(
    llama_url: str, tmp_path: Path, stream: bool
):
    recording = tmp_path / "recording.yaml"
    settings = RecorderSettings(upstream=Upstream.parse(f"{llama_url}/v1"), out=recording)
    question = [{"role": "user", "content": f"{CLEAN_QUESTION} [[mock:fidelity#real]]"}]
    body = chat(question, stream=stream)
    with serve_recorder(settings) as (recorder_url, recorder):
        real = httpx.post(f"{recorder_url}/v1/chat/completions", json=body, timeout=GENERATION_S)
        assert recorder.wait_for(saved=1, timeout_s=DEADLINE_S)
    settings = build_settings((recording,), replay_pacing=0)
    [step] = settings.flows["fidelity"].steps
    assert step.dialect == "llama.cpp"  # the recorder heard the server's own dialect
    as_openai = replace(settings.flows["fidelity"], steps=(replace(step, dialect="openai"),))
    replays: list[httpx.Response] = []
    for flows in (settings.flows, {**settings.flows, "fidelity": as_openai}):
        with serve_mock(replace(settings, flows=flows)) as mock_url:
            url = f"{mock_url}/v1/chat/completions"
            replays.append(httpx.post(url, json=body, timeout=DEADLINE_S))
    replayed, control = replays
    assert real.status_code == replayed.status_code == 200
    assert frames_of(replayed.content, stream) == frames_of(real.content, stream)
    assert frames_of(control.content, stream) != frames_of(real.content, stream)  # the diff sees


def test_without_the_build_the_suite_names_the_command_that_makes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from .llama_build import BuildMissing, LlamaServerBuild

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(BuildMissing, match=r"python -m tests\.thirdparty\.venvs llama-server"):
        LlamaServerBuild().require()
