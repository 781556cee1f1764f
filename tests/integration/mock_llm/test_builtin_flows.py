"""Every built-in flow, every step (and one request past the last), streamed and not.

The expectations are derived from each flow's own definition, so this file is an executable
statement that the wire replays every step exactly, whatever flows are added later. Each
test plays every flow in turn (a KEY each) and names every flow that fails.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import httpx

from mock_llm import builtin_flows
from mock_llm.flows.model import (
    CutFault,
    ErrorEventFault,
    Flow,
    HttpFault,
    MalformedFault,
    StallFault,
    Step,
)

from ...support.cases import check_each_async
from ...support.journal import settled_journal
from ...support.sse import chat_body, read_sse

FLOWS = builtin_flows()
LONG_S = 2.0  # steps that take longer than this are read partly, then left


def duration_s(step: Step) -> float:
    stall = step.fault.seconds if isinstance(step.fault, StallFault) else 0.0
    return (step.ttft_ms + step.delay_ms * (len(step.content) + len(step.reasoning))) / 1000 + stall


def trigger(flow: Flow, key: str) -> str:
    return f"Question about backups [[mock:{flow.name}#{key}]]"


def expected_tool_calls(step: Step) -> list[tuple[str, str]]:
    return [(c.name, c.arguments) for c in step.tool_calls]


def streamed_tool_calls(chunks: list[dict]) -> list[tuple[str, str]]:
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for part in chunk["choices"][0]["delta"].get("tool_calls", []) if chunk["choices"] else []:
            call = calls.setdefault(part["index"], ["", ""])
            call[0] += part.get("function", {}).get("name", "")
            call[1] += part.get("function", {}).get("arguments", "")
    return [(name, args) for name, args in (calls[i] for i in sorted(calls))]


async def test_each_streamed_flow_replays_every_step(http: httpx.AsyncClient, key: str):
    names = sorted(FLOWS)
    checked = await check_each_async(
        ((name, name) for name in names),
        lambda name: streamed_flow_replays_every_step(http, f"{key}-{name}", name),
    )
    assert checked == len(names)


async def streamed_flow_replays_every_step(http: httpx.AsyncClient, key: str, name: str):
    flow = FLOWS[name]
    for request_number in range(1, len(flow.steps) + 2):
        step = flow.step_for(request_number - 1)
        long = duration_s(step) > LONG_S
        early = min(4, step.fault.after_chunks) if isinstance(step.fault, StallFault) else 4
        result = await read_sse(
            http, chat_body(trigger(flow, key)), max_events=early if long else None
        )
        fault = step.fault
        if isinstance(fault, HttpFault):
            assert result.status == fault.status
            assert json.loads(result.events[0])["error"]["message"] == fault.message
            continue
        assert result.status == 200
        if long:
            assert len(result.events) == early
            continue
        if isinstance(fault, CutFault) and fault.mode == "abort":
            assert isinstance(result.error, httpx.RemoteProtocolError)
        else:
            assert result.error is None
        content = result.joined("content")
        if fault is None or isinstance(fault, MalformedFault):
            assert result.done
            assert content == step.content
            assert result.joined("reasoning_content") == step.reasoning
            assert streamed_tool_calls(result.chunks) == expected_tool_calls(step)
            assert result.chunks[-1]["choices"][0]["finish_reason"] == step.resolved_finish_reason
        else:
            assert not result.done
            assert step.content.startswith(content)
            assert len(content) < len(step.content)
        if isinstance(fault, ErrorEventFault):
            assert json.loads(result.events[-1])["error"]["message"] == fault.message
    entries = await settled_journal(http, key, count=len(flow.steps) + 1)
    assert [e.request_in_turn for e in entries] == list(range(1, len(flow.steps) + 2))
    assert [e.step for e in entries] == [
        min(n, len(flow.steps)) for n in range(1, len(flow.steps) + 2)
    ]
    assert {e.flow for e in entries} == {name}


QUICK = sorted(
    n for n, f in FLOWS.items() if all(duration_s(s) <= LONG_S and s.fault is None for s in f.steps)
)


async def test_each_non_streamed_flow_answers_every_step_whole(http: httpx.AsyncClient, key: str):
    checked = await check_each_async(
        ((name, name) for name in QUICK),
        lambda name: non_streamed_flow_answers_every_step_whole(http, f"{key}-{name}", name),
    )
    assert checked == len(QUICK)


async def non_streamed_flow_answers_every_step_whole(http: httpx.AsyncClient, key: str, name: str):
    flow = FLOWS[name]
    for index, step in enumerate(flow.steps):
        response = await http.post(
            "/v1/chat/completions", json=chat_body(trigger(flow, key), stream=False)
        )
        assert response.status_code == 200, (index, response.text)
        message = response.json()["choices"][0]["message"]
        assert (message["content"] or "") == step.content
        assert message.get("reasoning_content", "") == step.reasoning
        calls = [
            (c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls", [])
        ]
        assert calls == expected_tool_calls(step)


async def test_listing_shows_each_builtin_flows_expect_block(http: httpx.AsyncClient):
    listing = {f["name"]: f for f in (await http.get("/_mock/flows")).json()["flows"]}
    for name, flow in FLOWS.items():
        expect = asdict(flow.expect) if flow.expect is not None else None
        assert listing[name]["expect"] == expect, name
