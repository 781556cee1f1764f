"""`--profiles auto`, the default: the guard proxy picks its registry from each request's
`model` and the notes app from SG_LLM_MODEL, so a Qwen `<tool_call>` span is stripped for a
Qwen model and stays text (a look-alike) for LFM2 and an unknown name."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from openai.types.chat import ChatCompletionMessageParam

from guard.cli import parse_args
from guard.http.server import GuardSettings, create_app
from guardrail.model_profiles import AUTO, parse_profiles
from servekit.in_thread import serve_in_thread

from ...support.deadlines import DEADLINE_S
from ...support.servers import app_settings, serve_app, serve_guard
from ...support.sse import ask
from ..conftest import sdk_for
from ..helpers.recovery import add_flows

FLOW = "auto-hermes-leak"
SHOWN = "Backups run nightly at 02:00."
LEAK = '<tool_call>{"name": "read", "arguments": {"path": "/homelab/backup-notes.md"}}</tool_call>'
FLOWS = {FLOW: {"steps": [{"content": f"{SHOWN}{LEAK} Verified weekly."}]}}
STRIPPED = f"{SHOWN} Verified weekly."
KEPT = f"{SHOWN}{LEAK} Verified weekly."
LOG_LINE = re.compile(
    r"^guard: chat status=200 stream=false retries=0 total_ms=\d+ scaffold_stripped=\d+"
    r" profiles=(\S+) request_id=\S+$",
    re.MULTILINE,
)


def logged_profiles(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The profiles= of the guard's request lines (a whole answer's is written before the
    client has it)."""
    return LOG_LINE.findall("\n".join(r.getMessage() for r in caplog.records))


@pytest.fixture(scope="module")
def flows(mock_url: str) -> None:
    add_flows(mock_url, FLOWS)


@pytest.fixture(scope="module")
def proxy_url(mock_url: str, flows: None) -> Iterator[str]:
    with serve_guard(mock_url) as url:
        yield url


async def answer(url: str, model: str, key: str, *, stream: bool) -> str:
    async with sdk_for(url) as sdk:
        messages: list[ChatCompletionMessageParam] = [
            {"role": "user", "content": f"When do backups run? [[mock:{FLOW}#{key}]]"}
        ]
        if not stream:
            whole = await sdk.chat.completions.create(model=model, messages=messages)
            return whole.choices[0].message.content or ""
        parts: list[str] = []
        async for chunk in await sdk.chat.completions.create(
            model=model, messages=messages, stream=True
        ):
            parts.extend(c.delta.content or "" for c in chunk.choices)
        return "".join(parts)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("qwen3:8b", STRIPPED),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", STRIPPED),
        ("hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M", STRIPPED),
        ("lfm2-1.2b", KEPT),
        ("gemma3:4b", KEPT),
        ("my-local-model", KEPT),
    ],
)
async def test_the_default_proxy_strips_a_hermes_span_only_for_a_model_that_writes_it(
    proxy_url: str, key: str, model: str, expected: str, stream: bool
):
    assert await answer(proxy_url, model, key, stream=stream) == expected


@pytest.mark.parametrize(
    ("model", "profiles"),
    [
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "auto:Qwen3-Coder,Qwen"),
        ("my-local-model", "auto:unknown"),
    ],
)
async def test_the_proxys_log_line_names_the_families_auto_matched(
    proxy_url: str, key: str, caplog: pytest.LogCaptureFixture, model: str, profiles: str
):
    caplog.set_level(logging.INFO, logger="guard")
    await answer(proxy_url, model, key, stream=False)
    assert logged_profiles(caplog) == [profiles]


@pytest.fixture(scope="module")
def fixed_proxy_url(mock_url: str, flows: None) -> Iterator[str]:
    settings = GuardSettings(upstream=mock_url, profiles=parse_profiles("none"))
    config = uvicorn.Config(create_app(settings), log_level="warning")
    with serve_in_thread(config) as url:
        yield url


async def test_a_proxy_with_profiles_none_keeps_the_span_even_for_qwen(
    fixed_proxy_url: str, key: str
):
    assert await answer(fixed_proxy_url, "qwen3:8b", key, stream=True) == KEPT


async def test_a_proxy_with_a_fixed_setting_logs_the_setting(
    fixed_proxy_url: str, key: str, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO, logger="guard")
    await answer(fixed_proxy_url, "qwen3:8b", key, stream=False)
    assert logged_profiles(caplog) == ["none"]


@pytest.mark.parametrize(("model", "expected"), [("qwen3:8b", STRIPPED), ("lfm2-1.2b", KEPT)])
async def test_the_app_strips_by_the_name_in_sg_llm_model(
    mock_url: str, flows: None, tmp_path: Path, key: str, model: str, expected: str
):
    settings = app_settings(mock_url, tmp_path, SG_LLM_MODEL=model)
    with serve_app(settings) as url:
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE_S) as client:
            turn = await ask(client, f"What is the capital of France? [[mock:{FLOW}#{key}]]")
    assert turn.last["type"] == "done"
    assert turn.text == expected


def test_the_guard_cli_and_its_settings_default_to_auto():
    assert parse_profiles(parse_args(["--upstream", "http://127.0.0.1:9"]).profiles) == AUTO
    assert GuardSettings(upstream="http://127.0.0.1:9").profiles == AUTO
