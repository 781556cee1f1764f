"""Unit layer: pure modules only, no sockets. Shared builders for steps and plans, and the
bundled sample notes' index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

from mock_llm import builtin_flows
from mock_llm.flows.model import Step, ToolCall
from mock_llm.play.response_plan import Api, RequestShape, ResponsePlan, Send, plan_response
from mock_llm.wire import openai as openai_wire
from scaffold_guard.app.config import BUNDLED_NOTES
from scaffold_guard.app.rag.index import NotesIndex

META = openai_wire.CompletionMeta(id="chatcmpl-mock7", created=1_700_000_000, model="lfm2-test")
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "when do backups run?"}]
CALL = ToolCall("read", '{"path": "/homelab/backups.md"}')
FULL = Step(content="Backups run nightly.", reasoning="They ask about backups.", tool_calls=(CALL,))
"""A step with reasoning, content and a tool call: every part a format writes."""


def built_in_answers() -> list[tuple[str, Step]]:
    """Every step of every built-in flow that answers (no fault), named `FLOW-N`."""
    return [
        (f"{name}-{index + 1}", step)
        for name, flow in sorted(builtin_flows().items())
        for index, step in enumerate(flow.steps)
        if step.fault is None
    ]


def plan(
    step: Step, *, stream: bool = True, include_usage: bool = False, api: Api = "openai"
) -> ResponsePlan:
    shape = RequestShape(stream=stream, include_usage=include_usage, messages=MESSAGES, api=api)
    return plan_response(step, META, step.reasoning_field or "reasoning_content", shape)


def sent(p: ResponsePlan) -> bytes:
    """Every byte a plan sends, in order."""
    return b"".join(a.data for a in p.actions if isinstance(a, Send))


def sent_events(p: ResponsePlan) -> list[str]:
    """The `data:` payloads a stream plan sends, decoded, in order."""
    payloads: list[str] = []
    for action in p.actions:
        if isinstance(action, Send):
            text = action.data.decode()
            assert text.endswith("\n\n")
            for event in text[:-2].split("\n\n"):
                assert event.startswith("data: ")
                assert "\n" not in event
                payloads.append(event[len("data: ") :])
    return payloads


def typed_events(
    raw: bytes, sdk_model: TypeAdapter[Any] | None = None, *, unmodelled: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The events of a typed SSE stream (the Responses and Messages APIs'), decoded; each
    is one `event:` line naming its data's `type` and one `data:` line. With `sdk_model`,
    the official SDK's model of an event must accept each one whose type is not
    `unmodelled`."""
    events: list[dict[str, Any]] = []
    for block in raw.decode().split("\n\n")[:-1]:
        head, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert head == f"event: {event['type']}"
        if sdk_model is not None and event["type"] not in unmodelled:
            sdk_model.validate_python(event)
        events.append(event)
    return events


def sent_chunks(p: ResponsePlan) -> list[dict[str, Any]]:
    return [json.loads(e) for e in sent_events(p) if e != "[DONE]"]


def sent_body(p: ResponsePlan) -> dict[str, Any]:
    """The JSON body a non-streaming plan sends."""
    return json.loads(b"".join(a.data for a in p.actions if isinstance(a, Send)))


@pytest.fixture
def meta() -> openai_wire.CompletionMeta:
    return META


SAMPLE_NOTES = BUNDLED_NOTES


@pytest.fixture(scope="module")
def sample_index() -> Iterator[NotesIndex]:
    """The bundled sample notes, indexed in memory once per test module."""
    with NotesIndex(SAMPLE_NOTES, ":memory:", refresh_interval_s=3600) as idx:
        yield idx
