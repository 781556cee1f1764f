"""The LiteLLM guardrail in LiteLLM's own proxy (1.108.7 from PyPI), the official openai SDK
as the client, the mock as the model server.

Three proxies from the shipped example config (scaffold_guard/integrations/litellm/config.yaml): one
with our guardrail as shipped (`profiles` absent: `auto`), with a second alias, `chat`, whose
deployment's model names every family; one with its commented-out option set
(`profiles: hermes`), and one without the guardrail (the negative control). Through the
guarded one, every built-in flow whose first answer has no tool call is one turn under
`lfm2` (each family flow under `chat` too), and its `expect` block for that model is what
the client gets, streamed and whole: the text shown, the one recovery (two requests, the
correction in the system message, no tools), the malformed-reply error. Clean, thinking and
tool-call streams reach the client exactly as through the bare proxy; through the bare one
the same markup flows leak. About a minute in all, most of it the proxies' start.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY
from mock_llm import Flow, build_settings, builtin_flows, serve_mock

from ..support.deadlines import DEADLINE_S, POLL_S
from ..support.families import EVERY_FAMILY, hidden_canary
from ..support.journal import settled_journal
from .litellm_proxy import (
    MASTER_KEY,
    REPO,
    log_of,
    proxy_env,
    serve_litellm_proxies,
    shipped_config,
    without_guardrails,
)
from .venvs import LITELLM

pytestmark = pytest.mark.thirdparty

FLOWS = builtin_flows()
ONE_REQUEST_TURNS = sorted(
    name
    for name, flow in FLOWS.items()
    if flow.expect is not None and not flow.steps[0].tool_calls and flow.steps[0].fault is None
)
LEAKS = sorted(
    name
    for name in ONE_REQUEST_TURNS
    if (canary := FLOWS[name].canary) is not None and canary in FLOWS[name].steps[0].content
)
"""The flows whose first answer carries a canary in its markup: through a bare proxy, a leak."""
DEPLOYMENTS = {"lfm2": "lfm2", "chat": EVERY_FAMILY}
"""The guarded proxy's aliases and their deployments' model names."""
PLAYS = [(name, "lfm2") for name in ONE_REQUEST_TURNS] + [
    (name, "chat") for name in ONE_REQUEST_TURNS if FLOWS[name].family is not None
]
"""(flow, alias): each flow under `lfm2`, each family flow under `chat` too."""
SYSTEM = "You answer from the user's homelab notes."
TOOLS: list[ChatCompletionToolParam] = [
    {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
]


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with serve_mock(build_settings(())) as url:
        yield url


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("litellm")


@pytest.fixture(scope="module")
def proxies(mock_url: str, workdir: Path) -> Iterator[dict[str, str]]:
    config = shipped_config(f"{mock_url}/v1")
    guarded = copy.deepcopy(config)
    alias = copy.deepcopy(config["model_list"][0])
    alias["model_name"] = "chat"
    alias["litellm_params"]["model"] = f"openai/{DEPLOYMENTS['chat']}"
    guarded["model_list"].append(alias)
    fixed = copy.deepcopy(config)
    fixed["guardrails"][0]["litellm_params"]["profiles"] = "hermes"  # the example's option
    configs = {"guarded": guarded, "fixed": fixed, "bare": without_guardrails(config)}
    with serve_litellm_proxies(configs, workdir) as urls:
        yield urls


@pytest.fixture
async def http(mock_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=mock_url, timeout=DEADLINE_S) as client:
        yield client


def sdk(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=DEADLINE_S
    )


def messages(flow: str, key: str) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"When do backups run? [[mock:{flow}#{key}]]"},
    ]


async def streamed_text(url: str, flow: str, key: str, model: str = "lfm2") -> str:
    async with sdk(url) as client, asyncio.timeout(DEADLINE_S):
        stream = await client.chat.completions.create(
            model=model, messages=messages(flow, key), tools=TOOLS, stream=True
        )
        parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    return "".join(parts)


async def whole_text(url: str, flow: str, key: str, model: str = "lfm2") -> str:
    async with sdk(url) as client, asyncio.timeout(DEADLINE_S):
        completion = await client.chat.completions.create(
            model=model, messages=messages(flow, key), tools=TOOLS
        )
    return completion.choices[0].message.content or ""


# --- through the guardrail ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(("name", "alias"), PLAYS)
async def test_each_flow_reaches_the_client_as_its_expect_block_says(
    proxies: dict[str, str], http: httpx.AsyncClient, key: str, name: str, alias: str, stream: bool
):
    """Under `auto`, a family flow's outcome is the one for the alias's deployment."""
    flow: Flow = FLOWS[name]
    expect = flow.expect_for(DEPLOYMENTS[alias])
    assert expect is not None
    read = streamed_text if stream else whole_text
    if expect.error == "malformed":
        with pytest.raises(openai.APIError, match=MALFORMED_REPLY):
            await read(proxies["guarded"], name, key, alias)
    else:
        shown = await read(proxies["guarded"], name, key, alias)
        assert shown == expect.shown
        if canary := hidden_canary(flow, DEPLOYMENTS[alias]):
            assert canary not in shown
    entries = await settled_journal(http, key, count=expect.requests)
    assert len(entries) == expect.requests
    assert entries[0].body["tools"]
    if expect.recovery:
        recovery = entries[1].body
        assert "tools" not in recovery
        assert recovery["messages"][0] == {
            "role": "system",
            "content": f"{SYSTEM}\n\n{CORRECTION_INSTRUCTION}",
        }
        assert recovery["messages"][1:] == entries[0].body["messages"][1:]


async def test_a_recovered_stream_is_one_completion_to_the_client(
    proxies: dict[str, str], key: str
):
    events = await sse_events(proxies["guarded"], "scaffold-split", key)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert len({chunk["id"] for chunk in chunks}) == 1
    deltas = [choice["delta"] for chunk in chunks for choice in chunk["choices"]]
    finishes = [c.get("finish_reason") for chunk in chunks for c in chunk["choices"]]
    assert sum("role" in delta for delta in deltas) == 1
    assert sum(reason is not None for reason in finishes) == 1
    expect = FLOWS["scaffold-split"].expect
    assert expect is not None
    assert "".join(delta.get("content") or "" for delta in deltas) == expect.shown


async def test_a_malformed_reply_ends_the_stream_with_the_error_and_no_finish(
    proxies: dict[str, str], key: str
):
    events = await sse_events(proxies["guarded"], "scaffold-repeat", key)
    errors = [json.loads(e)["error"] for e in events if e.startswith('{"error"')]
    assert [e["message"] for e in errors] == [MALFORMED_REPLY]
    chunks = [json.loads(e) for e in events if e.startswith('{"id"')]
    assert all(c.get("finish_reason") is None for chunk in chunks for c in chunk["choices"])


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", ["clean", "thinking", "tool-then-answer"])
async def test_what_the_guardrail_leaves_alone_reaches_the_client_as_without_it(
    proxies: dict[str, str], key: str, name: str, stream: bool
):
    async def reply(url: str, turn: str) -> Any:
        async with sdk(url) as client, asyncio.timeout(DEADLINE_S):
            if not stream:
                completion = await client.chat.completions.create(
                    model="lfm2", messages=messages(name, turn), tools=TOOLS
                )
                return without_ids(completion.model_dump())
            chunks = await client.chat.completions.create(
                model="lfm2", messages=messages(name, turn), tools=TOOLS, stream=True
            )
            return [without_ids(c.model_dump()) async for c in chunks]

    guarded = await reply(proxies["guarded"], f"{key}-a")
    bare = await reply(proxies["bare"], f"{key}-b")
    assert guarded == bare


HERMES_LEAK = {
    "flows": {
        "hermes-leak": {
            "description": "A Hermes-format tool call leaked into prose.",
            "steps": [{"content": 'Fine. <tool_call>{"name": "read"}</tool_call>', "chunking": 3}],
        }
    }
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_the_profiles_option_reaches_the_guardrail(
    proxies: dict[str, str], http: httpx.AsyncClient, key: str, stream: bool
):
    (await http.post("/_mock/flows", json=HERMES_LEAK)).raise_for_status()
    read = streamed_text if stream else whole_text
    assert await read(proxies["fixed"], "hermes-leak", f"{key}-a") == "Fine. "
    assert await read(proxies["bare"], "hermes-leak", f"{key}-b") == (
        'Fine. <tool_call>{"name": "read"}</tool_call>'
    )


async def test_each_strip_is_a_warning_in_the_proxys_log(
    proxies: dict[str, str], workdir: Path, key: str
):
    with pytest.raises(openai.APIError, match=MALFORMED_REPLY):
        await streamed_text(proxies["guarded"], "scaffold-repeat", key)
    canary = FLOWS["scaffold-repeat"].canary
    assert canary is not None
    pattern = re.compile(
        rf"agent: stripped 96 chars of tool-scaffolding in round (\d): '.*{canary}.*'"
    )
    rounds: list[str] = []
    async with asyncio.timeout(DEADLINE_S):
        while len(rounds) < 2:
            rounds = pattern.findall(log_of(workdir, "guarded"))
            await asyncio.sleep(POLL_S)
    assert rounds[:2] == ["1", "2"]


async def test_a_client_that_leaves_closes_the_upstream_stream(
    proxies: dict[str, str], http: httpx.AsyncClient, key: str
):
    body = {"model": "lfm2", "stream": True, "messages": messages("stall", key)}
    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    url = f"{proxies['guarded']}/v1/chat/completions"
    async with (
        asyncio.timeout(DEADLINE_S),
        httpx.AsyncClient(timeout=DEADLINE_S) as client,
        client.stream("POST", url, json=body, headers=headers) as reply,
    ):
        async for line in reply.aiter_lines():
            if '"content":"' in line and '"content":""' not in line:
                break  # the first words are here; the model goes silent for 30 s next
    [entry] = await settled_journal(http, key)
    assert entry.outcome == "client_disconnected"


def test_the_proxy_hands_the_guardrail_every_chunk_not_its_unified_path(tmp_path: Path):
    # LiteLLM's unified guardrail path (taken by a guardrail with its own apply_guardrail)
    # samples every 5th chunk of a stream and drops text rewrites; ours must get the stream.
    probe = (
        "import litellm\n"
        "from litellm.proxy.utils import ProxyLogging\n"
        "from scaffold_guard.integrations.litellm_guardrail import ScaffoldGuardrail\n"
        "guard = ScaffoldGuardrail(guardrail_name='g', event_hook='post_call', default_on=True)\n"
        "litellm.callbacks = [guard]\n"
        "caps = ProxyLogging.callback_capabilities()\n"
        "print([kind for callback, kind in caps.iterator_overrides if callback is guard])\n"
    )
    done = subprocess.run(
        [str(LITELLM.ensure().python), "-c", probe],
        env=proxy_env(tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "['override']"


# --- without it: the negative control -----------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", LEAKS)
async def test_without_the_guardrail_the_markup_reaches_the_client(
    proxies: dict[str, str], http: httpx.AsyncClient, key: str, name: str, stream: bool
):
    flow = FLOWS[name]
    shown = await (streamed_text if stream else whole_text)(proxies["bare"], name, key)
    assert flow.canary is not None
    assert flow.canary in shown
    assert len(await settled_journal(http, key)) == 1


# --- helpers ------------------------------------------------------------------------------------


async def sse_events(url: str, flow: str, key: str) -> list[str]:
    body = {"model": "lfm2", "stream": True, "messages": messages(flow, key)}
    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    async with httpx.AsyncClient(timeout=DEADLINE_S) as client:
        reply = await client.post(f"{url}/v1/chat/completions", json=body, headers=headers)
    return [line[6:] for line in reply.text.split("\n\n") if line.startswith("data: ")]


IDS = re.compile(r'"id": "[^"]*"|"created": \d+')


def without_ids(value: dict[str, Any]) -> str:
    """A completion or chunk as JSON without its ids and creation time (each completion, and
    each of its tool calls, has its own)."""
    return IDS.sub("", json.dumps(value))
