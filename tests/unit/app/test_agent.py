"""scaffold_guard.app.rag.agent's round loop, driven by a scripted fake model and a fake tool runner
(tests/unit/helpers/fakes.py). Every turn is run under a deadline."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Sequence

import pytest

from guardrail import Registry, registry_for
from guardrail.policy import CORRECTION_INSTRUCTION, strip_warning
from guardrail.registries import DEFAULT_REGISTRY
from scaffold_guard.app.errors import AppError, LLMError, MalformedReplyError
from scaffold_guard.app.rag.agent import (
    TOOL_CRASHED,
    AgentEvent,
    AgentRecord,
    ToolEvent,
    ToolRunner,
    run_agent,
)
from scaffold_guard.app.rag.types import (
    ChatMessage,
    RecoveryNotice,
    RetryNotice,
    RoundEnd,
    StreamPiece,
    ToolOutcome,
    ToolSpec,
)

from ..helpers.fakes import SPECS, USER, FakeChat, FakeTools, Item, answer, call, tool_round

DEADLINE_S = 10.0


async def run_turn(
    chat: FakeChat,
    tools: ToolRunner | None = None,
    *,
    messages: list[ChatMessage] | None = None,
    record: AgentRecord | None = None,
    max_rounds: int = 3,
) -> tuple[list[AgentEvent], AgentRecord]:
    record = record if record is not None else AgentRecord()
    items: list[AgentEvent] = []
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


# --- the guardrail in the stream -------------------------------------------------------------

SPAN = "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>"


def scaffold_only(thinking: str = "") -> list[Item]:
    pieces: list[Item] = [StreamPiece("thinking", thinking)] if thinking else []
    return [*pieces, StreamPiece("content", SPAN[:7]), StreamPiece("content", SPAN[7:])]


async def guarded(
    chat: FakeChat,
    tools: ToolRunner | None = None,
    *,
    max_rounds: int = 3,
    record: AgentRecord | None = None,
    registry: Registry = DEFAULT_REGISTRY,
) -> tuple[list[AgentEvent], AgentRecord, list[str]]:
    record = record if record is not None else AgentRecord()
    log = logging.Logger("test-agent")
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda rec: lines.append(rec.getMessage())  # type: ignore[method-assign]
    log.addHandler(handler)
    async with asyncio.timeout(DEADLINE_S):
        turn = run_agent(chat, tools, list(USER), record, max_rounds, registry=registry, log=log)
        items = [item async for item in turn]
    return items, record, lines


async def test_answer_text_is_filtered_and_thinking_is_not() -> None:
    thinking = f"I could call {SPAN} here."
    script: list[Item] = [
        StreamPiece("thinking", thinking),
        StreamPiece("content", f"Backups {SPAN}run nightly."),
        RoundEnd((), "stop"),
    ]

    items, record, _ = await guarded(FakeChat([script]))

    assert StreamPiece("thinking", thinking) in items
    assert content(items) == "Backups run nightly."
    assert record.scaffold_stripped == len(SPAN)
    assert record.content_chars == len("Backups run nightly.")


async def test_harmony_analysis_written_into_the_answer_is_shown_as_thinking() -> None:
    script: list[Item] = [
        StreamPiece("content", "<|channel|>analysis<|message|>User asks when. Check"),
        StreamPiece("content", " notes.<|end|><|start|>assistant<|channel|>final<|message|>Nig"),
        StreamPiece("content", "htly at 02:00.<|return|>"),
        RoundEnd((), "stop"),
    ]

    items, record, _ = await guarded(FakeChat([script]), registry=registry_for("gpt-oss-20b"))

    thinking = [i.text for i in items if isinstance(i, StreamPiece) and i.kind == "thinking"]
    assert "".join(thinking) == "User asks when. Check notes."
    assert content(items) == "Nightly at 02:00."
    assert items.index(StreamPiece("thinking", "User asks when. Check")) == 0
    assert record.thinking_chars == len("User asks when. Check notes.")
    assert not any(isinstance(item, RecoveryNotice) for item in items)


async def test_without_a_registry_every_piece_is_the_very_object_the_model_sent() -> None:
    script: list[Item] = [StreamPiece("content", f"a{SPAN}"), StreamPiece("content", "<|tool_")]
    chat = FakeChat([[*script, RoundEnd((), "stop")]])

    items, _ = await run_turn(chat, FakeTools())

    assert len(items) == len(script)
    assert all(got is sent for got, sent in zip(items, script, strict=True))


async def test_a_held_tail_is_flushed_before_the_round_ends() -> None:
    script: list[Item] = [StreamPiece("content", "Done <|tool_call_st"), RoundEnd((), "stop")]

    items, _, _ = await guarded(FakeChat([script]))

    assert items == [StreamPiece("content", "Done "), StreamPiece("content", "<|tool_call_st")]


async def test_a_guarded_round_is_closed_when_the_consumer_stops_early() -> None:
    chat = FakeChat([[StreamPiece("content", "one"), StreamPiece("content", "two"), *answer()]])
    turn = run_agent(chat, None, list(USER), AgentRecord(), 3, registry=DEFAULT_REGISTRY)

    async with asyncio.timeout(DEADLINE_S):
        assert await anext(turn) == StreamPiece("content", "one")
        await turn.aclose()

    assert chat.closed == 1


async def test_scaffold_only_gets_one_recovery_without_tools_and_with_the_correction() -> None:
    chat = FakeChat([[*scaffold_only(), RoundEnd((), "stop")], answer("Nightly at 02:00.")])

    items, record, _ = await guarded(chat, FakeTools())

    assert len(chat.calls) == 2
    assert chat.tools_sent == [SPECS, None]
    recovery_messages = chat.calls[1][0]
    assert [m["role"] for m in recovery_messages] == ["system", "user"]
    assert recovery_messages[0]["content"].endswith(f"\n\n{CORRECTION_INSTRUCTION}")
    assert recovery_messages[1] == USER[1]
    assert RecoveryNotice() in items
    assert content(items) == "Nightly at 02:00."
    assert (record.rounds, record.recoveries, record.retries) == (2, 1, 0)
    assert record.scaffold_stripped == len(SPAN)


async def test_scaffold_twice_is_a_malformed_reply_error() -> None:
    chat = FakeChat([[*scaffold_only(), RoundEnd((), "stop")]])  # the last round repeats

    with pytest.raises(MalformedReplyError) as caught:
        await guarded(chat, FakeTools())

    assert isinstance(caught.value, AppError)
    assert caught.value.message == "The model returned a malformed reply — please try again."
    assert len(chat.calls) == 2


async def test_scaffold_twice_counts_both_requests_stripped_characters() -> None:
    chat = FakeChat([[*scaffold_only(), RoundEnd((), "stop")]])
    record = AgentRecord()

    with pytest.raises(MalformedReplyError):
        await guarded(chat, record=record)

    assert record.scaffold_stripped == 2 * len(SPAN)


async def test_scaffold_mixed_with_content_shows_the_remainder_with_no_recovery() -> None:
    script: list[Item] = [StreamPiece("content", f"{SPAN}Backups run nightly."), *answer("")]
    chat = FakeChat([script])

    items, record, _ = await guarded(chat, FakeTools())

    assert len(chat.calls) == 1
    assert content(items) == "Backups run nightly."
    assert RecoveryNotice() not in items
    assert record.recoveries == 0


async def test_a_clean_answer_is_one_request_and_the_correction_is_nowhere() -> None:
    chat = FakeChat([answer("Nightly at 02:00.")])

    items, record, lines = await guarded(chat, FakeTools())

    assert len(chat.calls) == 1
    assert CORRECTION_INSTRUCTION not in json.dumps(chat.calls)
    assert content(items) == "Nightly at 02:00."
    assert (record.scaffold_stripped, lines) == (0, [])


async def test_an_empty_answer_with_nothing_stripped_is_not_recovered() -> None:
    chat = FakeChat([[StreamPiece("thinking", "Hmm."), RoundEnd((), "stop")]])

    items, record, _ = await guarded(chat, FakeTools())

    assert len(chat.calls) == 1
    assert items == [StreamPiece("thinking", "Hmm.")]
    assert record.recoveries == 0


async def test_scaffold_only_after_a_tool_round_recovers_with_the_tool_messages_last() -> None:
    chat = FakeChat(
        [tool_round(call(1)), [*scaffold_only(), RoundEnd((), "stop")], answer("From the note.")]
    )

    items, _, _ = await guarded(chat, FakeTools())

    assert len(chat.calls) == 3
    assert chat.tools_sent == [SPECS, SPECS, None]
    recovery_messages = chat.calls[2][0]
    assert [m["role"] for m in recovery_messages] == ["system", "user", "assistant", "tool"]
    assert recovery_messages[2:] == chat.calls[1][0][2:]
    assert CORRECTION_INSTRUCTION in recovery_messages[0]["content"]
    assert content(items) == "From the note."


async def test_a_round_with_a_real_tool_call_is_not_recovered_whatever_it_stripped() -> None:
    first: list[Item] = [*scaffold_only(), RoundEnd((call(1),), "tool_calls")]
    chat = FakeChat([first, answer("Nightly.")])

    items, record, _ = await guarded(chat, FakeTools())

    assert chat.tools_sent == [SPECS, SPECS]
    assert record.recoveries == 0
    assert [e.call for e in items if isinstance(e, ToolEvent)] == [call(1)]
    assert chat.calls[1][0][len(USER)]["content"] is None  # no markup sent back either


async def test_there_is_at_most_one_recovery_per_turn() -> None:
    chat = FakeChat(
        [
            [*scaffold_only(), RoundEnd((), "stop")],
            [StreamPiece("content", "Answer."), RoundEnd((call(1),), "tool_calls")],
            [*scaffold_only(), RoundEnd((), "stop")],
        ]
    )

    items, record, _ = await guarded(chat, FakeTools())

    assert len(chat.calls) == 2  # the recovery's stray tool call is not run: the turn ends
    assert record.recoveries == 1
    assert content(items) == "Answer."


async def test_the_round_cap_is_unchanged_under_the_guardrail() -> None:
    chat = FakeChat([tool_round(call(1)), tool_round(call(2)), answer()])

    _, record, _ = await guarded(chat, FakeTools(), max_rounds=1)

    assert chat.tools_sent == [SPECS, None]
    assert len(record.tool_calls) == 1


async def test_each_request_that_stripped_something_logs_one_warning() -> None:
    chat = FakeChat([[*scaffold_only(), RoundEnd((), "stop")], answer("Nightly.")])

    _, _, lines = await guarded(chat, FakeTools())

    assert lines == [strip_warning(len(SPAN), 1, SPAN)]
