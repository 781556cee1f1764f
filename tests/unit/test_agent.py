"""app.rag.agent's round loop, driven by a scripted fake model and a fake tool runner
(tests/unit/fakes.py). Every turn is run under a deadline."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence

import pytest

from app.errors import LLMError
from app.rag.agent import TOOL_CRASHED, AgentRecord, ToolEvent, ToolRunner, run_agent
from app.rag.types import ChatMessage, RetryNotice, RoundEnd, StreamPiece, ToolOutcome, ToolSpec

from .fakes import SPECS, USER, FakeChat, FakeTools, Item, answer, call, tool_round

DEADLINE_S = 10.0


async def run_turn(
    chat: FakeChat,
    tools: ToolRunner | None = None,
    *,
    messages: list[ChatMessage] | None = None,
    record: AgentRecord | None = None,
    max_rounds: int = 3,
) -> tuple[list[StreamPiece | RetryNotice | ToolEvent], AgentRecord]:
    record = record if record is not None else AgentRecord()
    items: list[StreamPiece | RetryNotice | ToolEvent] = []
    async with asyncio.timeout(DEADLINE_S):
        turn = run_agent(
            chat,
            tools,
            messages if messages is not None else list(USER),
            record,
            max_rounds,
        )
        async for item in turn:
            items.append(item)
    return items, record


def content(items: Sequence[object]) -> str:
    return "".join(i.text for i in items if isinstance(i, StreamPiece) and i.kind == "content")


# --- rounds ----------------------------------------------------------------------------------


async def test_a_turn_without_tool_calls_is_one_round() -> None:
    chat = FakeChat([answer("Nightly at 02:00.")])

    items, record = await run_turn(chat, FakeTools())

    assert items == [StreamPiece("content", "Nightly at 02:00.")]
    assert len(chat.calls) == 1
    assert chat.calls[0] == (USER, SPECS)
    assert record.rounds == 1


async def test_tool_round_then_answer_sends_the_call_and_its_result_back() -> None:
    chat = FakeChat([tool_round(call(1)), answer()])
    tools = FakeTools()

    items, _ = await run_turn(chat, tools)

    assert len(chat.calls) == 2
    second_messages, second_tools = chat.calls[1]
    assert second_tools == SPECS
    assert second_messages[: len(USER)] == USER
    assistant, tool_message = second_messages[len(USER) :]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": call(1).arguments},
            }
        ],
    }
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "contents of /homelab/backups.md",
    }
    assert tools.ran == [("read", call(1).arguments)]
    outcome = ToolOutcome(
        ok=True, text="contents of /homelab/backups.md", path="/homelab/backups.md"
    )
    assert items == [ToolEvent(call(1), outcome), StreamPiece("content", "Nightly at 02:00.")]


async def test_the_assistant_message_carries_the_rounds_content_but_not_its_thinking() -> None:
    first = [StreamPiece("thinking", "I should read."), *tool_round(call(1), content="Checking.")]
    chat = FakeChat([first, answer()])

    await run_turn(chat, FakeTools())

    assistant = chat.calls[1][0][len(USER)]
    assert assistant["content"] == "Checking."
    assert "I should read." not in json.dumps(chat.calls[1][0])


async def test_several_tool_calls_in_one_round_each_get_a_result_in_order() -> None:
    calls = (call(1, "grep", "/homelab/"), call(2, "list", "/homelab/"), call(3))
    chat = FakeChat([tool_round(*calls), answer()])
    tools = FakeTools()

    items, record = await run_turn(chat, tools)

    messages = chat.calls[1][0]
    assert [c["id"] for c in messages[len(USER)]["tool_calls"]] == ["call_1", "call_2", "call_3"]
    tool_messages = messages[len(USER) + 1 :]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2", "call_3"]
    assert all(m["role"] == "tool" for m in tool_messages)
    assert [name for name, _ in tools.ran] == ["grep", "list", "read"]
    assert [e.call for e in items if isinstance(e, ToolEvent)] == list(calls)
    assert record.tool_calls == list(calls)


async def test_pieces_and_retry_notices_are_re_yielded_in_order() -> None:
    notice = RetryNotice(attempt=2, delay_s=0.5, reason="HTTP 503 server error")
    script: list[Item] = [
        notice,
        StreamPiece("thinking", "Hmm."),
        StreamPiece("content", "Night"),
        StreamPiece("content", "ly."),
        RoundEnd((), "stop"),
    ]
    chat = FakeChat([script])

    items, _ = await run_turn(chat, FakeTools())

    assert items == script[:-1]


async def test_round_cap_forces_a_final_request_without_tools() -> None:
    chat = FakeChat([tool_round(call(1)), tool_round(call(2)), tool_round(call(3))])

    items, record = await run_turn(chat, FakeTools(), max_rounds=2)

    assert chat.tools_sent == [SPECS, SPECS, None]
    assert record.rounds == 3
    assert [e.call.id for e in items if isinstance(e, ToolEvent)] == ["call_1", "call_2"]
    assert len(record.tool_calls) == 2  # the final round's stray call is not run


async def test_a_zero_round_cap_asks_once_without_tools() -> None:
    chat = FakeChat([answer()])

    await run_turn(chat, FakeTools(), max_rounds=0)

    assert chat.tools_sent == [None]


async def test_without_a_tool_runner_the_request_has_tools_none_and_no_tool_runs() -> None:
    chat = FakeChat([tool_round(call(1)), answer()])

    items, record = await run_turn(chat, None)

    assert chat.tools_sent == [None]
    assert not [i for i in items if isinstance(i, ToolEvent)]
    assert record.tool_calls == []


async def test_a_runner_with_no_specs_sends_tools_none() -> None:
    chat = FakeChat([answer()])

    await run_turn(chat, FakeTools(specs=[]))

    assert chat.tools_sent == [None]


# --- the record ------------------------------------------------------------------------------


async def test_record_counts_rounds_retries_and_characters() -> None:
    notice = RetryNotice(attempt=2, delay_s=1.0, reason="HTTP 429 rate limited")
    first = [notice, StreamPiece("thinking", "abc"), *tool_round(call(1), content="1234")]
    second = [notice, StreamPiece("thinking", "de"), *answer("56789")]
    chat = FakeChat([first, second])

    _, record = await run_turn(chat, FakeTools())

    assert (record.rounds, record.retries) == (2, 2)
    assert (record.thinking_chars, record.content_chars) == (5, 9)
    assert record.tool_calls == [call(1)]


async def test_notes_read_lists_distinct_paths_of_successful_reads_only() -> None:
    calls = (
        call(1, "read", "/homelab/a.md"),
        call(2, "read", "/homelab/b.md"),
        call(3, "read", "/homelab/a.md"),
        call(4, "grep", "/homelab/c.md"),
    )
    chat = FakeChat(
        [tool_round(*calls), tool_round(call(5, "read", "/homelab/missing.md")), answer()]
    )

    class MissingFails(FakeTools):
        def run(self, name: str, arguments: str) -> ToolOutcome:
            if "missing" in arguments:
                return ToolOutcome(ok=False, text="no such note", path="/homelab/missing.md")
            return super().run(name, arguments)

    _, record = await run_turn(chat, MissingFails())

    assert record.notes_read == ["/homelab/a.md", "/homelab/b.md"]
    assert len(record.tool_calls) == 5


async def test_the_record_keeps_its_counts_when_the_turn_fails() -> None:
    chat = FakeChat([tool_round(call(1)), [StreamPiece("content", "Half"), LLMError("cut")]])
    record = AgentRecord()

    with pytest.raises(LLMError):
        await run_turn(chat, FakeTools(), record=record)

    assert (record.rounds, record.content_chars, len(record.tool_calls)) == (2, 4, 1)


# --- robustness ------------------------------------------------------------------------------


async def test_the_callers_messages_are_left_untouched() -> None:
    messages = copy.deepcopy(USER)
    snapshot = copy.deepcopy(messages)
    chat = FakeChat([tool_round(call(1)), answer()])

    await run_turn(chat, FakeTools(), messages=messages)

    assert messages == snapshot
    assert len(chat.calls[1][0]) == len(USER) + 2


async def test_llm_error_from_the_model_propagates() -> None:
    error = LLMError("The model service could not be reached.", retryable=True)
    chat = FakeChat([[error]])

    with pytest.raises(LLMError) as caught:
        await run_turn(chat, FakeTools())

    assert caught.value is error


async def test_a_chat_that_ends_without_round_end_is_an_llm_error() -> None:
    chat = FakeChat([[StreamPiece("content", "and then nothing")]])

    with pytest.raises(LLMError, match="cut off"):
        await run_turn(chat, FakeTools())


async def test_a_tool_that_raises_gives_the_model_a_failed_outcome() -> None:
    chat = FakeChat([tool_round(call(1, "explode")), answer()])

    items, _ = await run_turn(chat, FakeTools())

    [event] = [i for i in items if isinstance(i, ToolEvent)]
    assert event.outcome == ToolOutcome(ok=False, text=TOOL_CRASHED)
    assert chat.calls[1][0][-1]["content"] == TOOL_CRASHED
    assert content(items) == "Nightly at 02:00."


async def test_every_round_stream_is_closed_even_when_the_consumer_stops_early() -> None:
    chat = FakeChat([[StreamPiece("content", "one"), StreamPiece("content", "two"), *answer()]])
    turn = run_agent(chat, FakeTools(), list(USER), AgentRecord(), 3)

    async with asyncio.timeout(DEADLINE_S):
        assert await anext(turn) == StreamPiece("content", "one")
        await turn.aclose()

    assert chat.closed == 1


async def test_items_after_a_round_end_are_ignored() -> None:
    chat = FakeChat([[*answer("done"), StreamPiece("content", "stray")]])

    items, record = await run_turn(chat, FakeTools())

    assert content(items) == "done"
    assert record.content_chars == len("done")
    assert chat.closed == 1


class PlainIterator:
    """An async iterator that is not a generator (it has no aclose)."""

    def __init__(self, items: list[Item]) -> None:
        self._items = iter(items)

    def __aiter__(self) -> PlainIterator:
        return self

    async def __anext__(self) -> Item:
        try:
            return next(self._items)
        except StopIteration:
            raise StopAsyncIteration from None


async def test_a_chat_fn_returning_a_plain_async_iterator_works() -> None:
    def chat(messages: list[ChatMessage], tools: list[ToolSpec] | None) -> PlainIterator:
        return PlainIterator(answer("plain"))

    record = AgentRecord()
    async with asyncio.timeout(DEADLINE_S):
        items = [item async for item in run_agent(chat, None, list(USER), record, 3)]

    assert items == [StreamPiece("content", "plain")]
    assert record.rounds == 1
