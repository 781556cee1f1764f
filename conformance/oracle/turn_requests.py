"""A turn's upstream requests, as the contract judges them: how many, which carried the
correction line, what the one recovery sent, and what a tool round handed on (G1 to G5,
G12, G14, G15, CASE).

The requests are the turn's own, from the mock's journal by the turn's KEY once it settled,
side calls left out (conformance/oracle/upstream.py).
"""

from __future__ import annotations

import json
from typing import Any

from conformance.oracle.clauses import CORRECTION
from guardrail.json_shapes import objects, string_field
from mock_llm.client import JournalRecord


def messages_of(entry: JournalRecord) -> list[dict[str, Any]]:
    return entry.body["messages"]


def system_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def corrected(entries: list[JournalRecord]) -> list[JournalRecord]:
    """The requests that carry the correction line (recoveries)."""
    return [e for e in entries if CORRECTION in json.dumps(messages_of(e), ensure_ascii=False)]


def count_problem(entries: list[JournalRecord], flow: str, wanted: int) -> str:
    """What is wrong with a turn's request count, with a hint where extra calls could be side
    calls (a title, tags) the profile has not named."""
    problem = f"flow {flow!r}: {len(entries)} upstream requests, the contract wants {wanted}"
    if len(entries) > wanted:
        problem += (
            "; if the app makes extra model calls per turn (titles, tags, follow-ups), name"
            " them in the profile's [model_calls] side_calls"
        )
    return problem


def assert_one_request_no_correction(entries: list[JournalRecord], flow: str) -> None:
    assert len(entries) == 1, count_problem(entries, flow, 1)
    assert CORRECTION not in json.dumps(messages_of(entries[0]), ensure_ascii=False), (
        f"flow {flow!r}: a request carried the correction line although nothing was stripped"
    )


def assert_one_recovery(entries: list[JournalRecord], flow: str) -> None:
    """The round and exactly one recovery: no tools, one system message that extends the
    first request's with the correction line, every other message unchanged (G2)."""
    assert len(entries) == 2, count_problem(entries, flow, 2) + " (the round and one recovery)"
    first, second = messages_of(entries[0]), messages_of(entries[1])
    assert "tools" not in entries[1].body, f"flow {flow!r}: the recovery request offered tools"
    systems = [i for i, m in enumerate(second) if m.get("role") == "system"]
    assert len(systems) == 1, f"flow {flow!r}: the recovery has {len(systems)} system messages"
    first_systems = [m for m in first if m.get("role") == "system"]
    recovery_system = system_text(second[systems[0]])
    assert CORRECTION in recovery_system, f"flow {flow!r}: the recovery lacks the correction line"
    if first_systems:
        assert recovery_system.startswith(system_text(first_systems[0]).rstrip()), (
            f"flow {flow!r}: the recovery's system message does not extend the first request's"
        )
    rest = [m for m in second if m.get("role") != "system"]
    assert rest == [m for m in first if m.get("role") != "system"], (
        f"flow {flow!r}: the recovery changed the messages besides the system message"
    )


def tool_round_of(messages: list[dict[str, Any]]) -> tuple[set[str], bool]:
    """The tool names the assistant messages call, and whether any tool result follows."""
    called: set[str] = set()
    for message in messages:
        calls: object = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in objects(calls):
            name = string_field(call.get("function"), "name")
            if name is not None:
                called.add(name)
    return called, any(message.get("role") == "tool" for message in messages)
