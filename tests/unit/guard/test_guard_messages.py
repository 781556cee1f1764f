"""guard.wire.messages_stream and guard.wire.messages_api: Anthropic's Messages API through the
guardrail, event by event and whole. Pure.

Streams are built in the shape the API (and the mock, `mock_llm.wire.anthropic`) sends
them; every event the guard sends is validated against the official SDK's own model
(`RawMessageStreamEvent`, pings and errors aside), and its block indexes are checked to be
what the SDK accumulates by: 0, 1, 2, ... in the order the blocks start, every other event
of a block carrying its block's."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from anthropic.types import RawMessageStreamEvent
from hypothesis import given
from hypothesis import strategies as st

from guard.wire.messages_api import MessageGuard, recovery_body
from guard.wire.messages_stream import MessagesStreamGuard
from guard.wire.responses_api import raw_event
from guardrail.model_profiles import registry_for
from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY, scrub
from guardrail.registries import DEFAULT_REGISTRY
from mock_llm.wire.anthropic import event, message, stream_events

from ..helpers.scaffolding import (
    HARMONY_ANSWER,
    HARMONY_REASONING,
    HARMONY_REPLY,
    cut_anywhere,
    routed_reasoning,
    untouchable,
)
from .test_guard_responses import ANSWERED, ASKED, CALL, CLEAN, FLOWS, LOOKALIKE, META, decode

EVENTS = pydantic.TypeAdapter[RawMessageStreamEvent](RawMessageStreamEvent)

Block = tuple[str, Any]  # ("text", pieces) | ("thinking", text) | ("tool", input JSON)


# --- streams as the API sends them ------------------------------------------------------------


def build(*blocks: Block, mid: str = "msg_1", stop: str = "end_turn") -> list[dict[str, Any]]:
    """A stream's events: message_start, a ping, each block, message_delta, message_stop."""
    opening: dict[str, Any] = {"id": mid, "type": "message", "role": "assistant", "model": "m"}
    opening |= {"content": [], "stop_reason": None, "stop_sequence": None}
    opening["usage"] = {"input_tokens": 5, "output_tokens": 0}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": opening}, {"type": "ping"}]
    for index, (kind, value) in enumerate(blocks):
        if kind == "text":
            started: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in value]
        elif kind == "thinking":
            started = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": value},
                {"type": "signature_delta", "signature": "sig"},
            ]
        else:
            started = {"type": "tool_use", "id": f"toolu_{index}", "name": "read", "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": value}]
        events.append({"type": "content_block_start", "index": index, "content_block": started})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    ending = {"stop_reason": stop, "stop_sequence": None}
    events.append({"type": "message_delta", "delta": ending, "usage": {"output_tokens": 9}})
    events.append({"type": "message_stop"})
    return events


def wire_bytes(events: list[dict[str, Any]]) -> bytes:
    return b"".join(event(e["type"], {k: v for k, v in e.items() if k != "type"}) for e in events)


def played(guard: MessagesStreamGuard, raw: bytes) -> list[bytes]:
    """What the client gets for a whole upstream stream, its end included."""
    out: list[bytes] = []
    for one in decode(raw):
        out += guard.event(one)
    return out + guard.end()


def parsed(out: list[bytes]) -> list[dict[str, Any]]:
    """The client's events, each checked against the SDK's model and its accumulation."""
    events = [json.loads(e.data) for e in decode(b"".join(out))]
    started: list[int] = []
    for one in events:
        if one["type"] in ("error", "ping"):  # the SDK skips a ping, raises on an error
            continue
        EVENTS.validate_python(one)
        if one["type"] == "content_block_start":
            assert one["index"] == len(started)  # the SDK appends the block at its index
            started.append(one["index"])
        elif one["type"].startswith("content_block"):
            assert one["index"] in started
    return events


def text_of(events: list[dict[str, Any]], field: str = "text") -> str:
    return "".join(e["delta"].get(field, "") for e in events if e["type"] == "content_block_delta")


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def block_types(events: list[dict[str, Any]]) -> list[str]:
    return [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]


def pieces(text: str, cuts: list[int]) -> list[str]:
    return [p for p in cut_anywhere(text, cuts) if p] or [""]


def mock_stream(name: str, step: int = 0) -> bytes:
    return b"".join(data for _, data in stream_events(FLOWS[name].steps[step], META, ASKED))


def guard() -> MessagesStreamGuard:
    return MessagesStreamGuard(DEFAULT_REGISTRY)


# --- chunkings --------------------------------------------------------------------------------


@given(st.lists(st.integers(0, 200), max_size=12))
def test_a_clean_stream_goes_out_as_the_upstreams_own_bytes_at_any_chunking(cuts: list[int]):
    raw = wire_bytes(
        build(("thinking", f"I think {CALL}"), ("text", pieces(CLEAN, cuts)), ("tool", "{}"))
    )
    assert b"".join(played(guard(), raw)) == raw


@given(
    st.lists(st.integers(0, 200), max_size=12),
    st.sampled_from(
        [f"Before. {CALL} After.", f"{CALL}Answer.", f"Text <|tool_calls|> more {CALL}", LOOKALIKE]
    ),
)
def test_markup_is_filtered_the_same_at_any_chunking(cuts: list[int], text: str):
    events = parsed(played(guard(), wire_bytes(build(("text", pieces(text, cuts))))))
    assert text_of(events) == scrub(text, DEFAULT_REGISTRY)
    assert kinds(events)[-3:] == ["content_block_stop", "message_delta", "message_stop"]


@given(st.lists(st.integers(0, 200), max_size=12))
def test_a_partial_marker_at_the_end_goes_out_just_before_the_blocks_stop(cuts: list[int]):
    text = "The log reads <|tool_call_st"
    events = parsed(played(guard(), wire_bytes(build(("text", pieces(text, cuts))))))
    assert text_of(events) == text
    last_delta = max(i for i, k in enumerate(kinds(events)) if k == "content_block_delta")
    assert kinds(events)[last_delta + 1] == "content_block_stop"


# --- blocks -----------------------------------------------------------------------------------

POOL: list[tuple[Block, str | None, str]] = [
    (("text", [CALL]), None, ""),  # (the block, the type it shows as or None: dropped, text)
    (("text", [" ", CALL, "\n"]), None, ""),
    (("text", [f"Before {CALL} after."]), "text", "Before  after."),
    (("text", [CLEAN]), "text", CLEAN),
    (("thinking", CALL), "thinking", ""),
    (("tool", '{"path": "x"}'), "tool_use", ""),
]


@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=5), st.integers(1, 7))
def test_any_mix_of_blocks_shows_its_kept_blocks_numbered_from_zero(
    picked: list[tuple[Block, str | None, str]], size: int
):
    blocks = [
        (kind, [p[i : i + size] for p in value for i in range(0, len(p), size)])
        if kind == "text"
        else (kind, value)
        for (kind, value), _, _ in picked
    ]
    one = guard()
    events = parsed(played(one, wire_bytes(build(*blocks))))  # the indexes are checked there
    kept = [shows for _, shows, _ in picked if shows is not None]
    assert one.recovering == (kept in ([], ["thinking"] * len(kept)) and len(kept) < len(picked))
    if not one.recovering:
        assert block_types(events) == kept
        assert text_of(events) == "".join(text for _, _, text in picked)


MATRIX: list[tuple[str, list[Block], list[str], str]] = [
    ("markup-then-text", [("text", [CALL]), ("text", [CLEAN])], ["text"], CLEAN),
    ("text-then-markup", [("text", [CLEAN]), ("text", [" ", CALL])], ["text"], CLEAN),
    (
        "markup-between-thinking-and-tool",
        [("thinking", "Hm."), ("text", [CALL[:9], CALL[9:]]), ("tool", "{}")],
        ["thinking", "tool_use"],
        "",
    ),
    ("two-answers", [("text", ["A ", CALL]), ("text", [CALL, "B"])], ["text", "text"], "A B"),
    ("clean-empty-block", [("text", [""]), ("text", [CLEAN])], ["text", "text"], CLEAN),
    ("clean-blank-block", [("text", ["\n"]), ("tool", "{}")], ["text", "tool_use"], "\n"),
]


@pytest.mark.parametrize(
    ("blocks", "shown_blocks", "shown"),
    [m[1:] for m in MATRIX],
    ids=[m[0] for m in MATRIX],
)
def test_a_text_block_left_with_nothing_is_dropped_and_the_indexes_stay_contiguous(
    blocks: list[Block], shown_blocks: list[str], shown: str
):
    one = guard()
    events = parsed(played(one, wire_bytes(build(*blocks))))
    assert block_types(events) == shown_blocks
    assert text_of(events) == shown
    assert not one.recovering
    stops = [e["index"] for e in events if e["type"] == "content_block_stop"]
    assert stops == list(range(len(shown_blocks)))


def test_thinking_with_markup_is_never_filtered():
    raw = wire_bytes(build(("thinking", CALL), ("text", [CLEAN])))
    events = parsed(played(guard(), raw))
    assert text_of(events, "thinking") == CALL
    assert b"".join(played(guard(), raw)) == raw


def test_a_reply_with_a_tool_use_needs_no_recovery_whatever_it_stripped():
    arguments = json.dumps({"path": CALL})
    one = guard()
    events = parsed(played(one, wire_bytes(build(("text", [CALL]), ("tool", arguments)))))
    assert not one.recovering
    assert one.stripped_chars == len(CALL)
    assert text_of(events, "partial_json") == arguments
    assert block_types(events) == ["tool_use"]
    assert events[-1]["type"] == "message_stop"


def test_text_announced_in_its_block_start_is_filtered_too():
    events = build(("text", ["after"]))
    events[2]["content_block"]["text"] = f"Before {CALL}"
    out = parsed(played(guard(), wire_bytes(events)))
    assert out[2]["content_block"]["text"] == "Before "
    assert text_of(out) == "after"


def test_text_after_its_block_stopped_is_filtered_too():
    events = build(("text", ["Answer."]))
    text_delta = {"type": "text_delta", "text": f" {CALL}late"}
    late: dict[str, Any] = {"type": "content_block_delta", "index": 0, "delta": text_delta}
    events.insert(4, late)  # after content_block_stop
    assert text_of(parsed(played(guard(), wire_bytes(events)))) == "Answer. late"


def test_another_kind_of_delta_shows_a_held_block():
    events = build(("text", [CALL]))
    cited: dict[str, Any] = {"type": "char_location", "cited_text": "x", "document_index": 0}
    cited |= {"start_char_index": 0, "end_char_index": 1}
    citation = {"type": "citations_delta", "citation": cited}
    events.insert(3, {"type": "content_block_delta", "index": 0, "delta": citation})
    one = guard()
    out = parsed(played(one, wire_bytes(events)))
    assert block_types(out) == ["text"]
    assert one.recovering  # shown, but nothing visible: still only markup


@pytest.mark.parametrize("name", ANSWERED)
def test_each_built_in_flow_as_the_mock_streams_it_shows_the_filtered_text(name: str):
    step = FLOWS[name].steps[0]
    raw = mock_stream(name)
    registry = registry_for(META.model)  # auto's, for the model the mock names
    one = MessagesStreamGuard(registry)
    out = played(one, raw)
    expect = FLOWS[name].expect_for(META.model)
    if expect is not None and expect.requests == 1:
        assert one.stripped_chars == expect.stripped_chars
    assert one.recovering == (expect is not None and expect.recovery)
    events = parsed(out)
    if one.recovering:
        assert kinds(events) == ["message_start", "ping"]
        return
    assert text_of(events) == scrub(step.content, registry)
    routed = routed_reasoning(step.content, registry)  # harmony's analysis channel, as text
    assert text_of(events, "thinking") == (step.reasoning or "") + routed
    if untouchable(step.content, registry):
        assert b"".join(out) == raw


# --- the one recovery -------------------------------------------------------------------------

DECISIONS: list[tuple[str, list[Block], bool]] = [
    ("markup-only", [("text", [CALL])], True),
    ("markup-and-blanks", [("text", ["\n ", CALL, "  "])], True),
    ("markup-after-thinking", [("thinking", "Let me look."), ("text", [CALL])], True),
    ("markup-in-two-blocks", [("text", [CALL]), ("text", [CALL])], True),
    ("markup-and-text", [("text", [CALL, "Answer."])], False),
    ("markup-and-tool-use", [("text", [CALL]), ("tool", "{}")], False),
    ("clean", [("text", [CLEAN])], False),
    ("nothing-stripped-nothing-shown", [("text", [" "])], False),
    ("thinking-only", [("thinking", CALL)], False),
]


@pytest.mark.parametrize(
    ("blocks", "recovers"), [d[1:] for d in DECISIONS], ids=[d[0] for d in DECISIONS]
)
def test_the_reply_gets_the_recovery_only_when_it_stripped_showed_nothing_and_used_no_tool(
    blocks: list[Block], recovers: bool
):
    one = guard()
    events = parsed(played(one, wire_bytes(build(*blocks))))
    assert one.recovering == recovers
    assert ("message_delta" in kinds(events)) != recovers
    if recovers:
        assert "text" not in block_types(events)  # never an empty block in the client's message


def test_the_recovery_continues_the_same_message_with_the_next_indexes():
    first = guard()
    before = played(first, wire_bytes(build(("thinking", "Let me look."), ("text", [CALL]))))
    assert first.recovering
    second = MessagesStreamGuard(DEFAULT_REGISTRY, follows=first)
    recovery = wire_bytes(build(("thinking", "Plain now."), ("text", [CLEAN]), mid="msg_2"))
    events = parsed(before + played(second, recovery))
    assert kinds(events).count("message_start") == 1
    assert events[0]["message"]["id"] == "msg_1"
    assert block_types(events) == ["thinking", "thinking", "text"]
    assert text_of(events) == CLEAN
    assert kinds(events)[-2:] == ["message_delta", "message_stop"]
    assert not second.malformed


def test_a_recovery_that_shows_nothing_ends_with_the_malformed_reply_error_event():
    first = guard()
    before = played(first, wire_bytes(build(("text", [CALL]))))
    second = MessagesStreamGuard(DEFAULT_REGISTRY, follows=first)
    events = parsed(before + played(second, wire_bytes(build(("text", [CALL]), mid="msg_2"))))
    assert kinds(events) == ["message_start", "ping", "ping", "error"]
    assert events[-1]["error"] == {"type": "api_error", "message": MALFORMED_REPLY}
    assert second.malformed
    assert second.ended


def test_a_stream_that_ends_without_its_message_delta_is_judged_at_its_end():
    first = guard()
    played(first, wire_bytes(build(("text", [CALL]))[:-2]))
    assert first.recovering
    second = MessagesStreamGuard(DEFAULT_REGISTRY, follows=first)
    out = played(second, wire_bytes(build(("text", [CALL]))[:-2]))
    assert kinds(parsed(out))[-1] == "error"


def test_a_clean_stream_that_ends_without_its_message_delta_gets_what_the_filter_held():
    events = build(("text", ["The log reads <|tool_call_st"]))[:-3]  # no stop, no ending
    out = parsed(played(guard(), wire_bytes(events)))
    assert text_of(out) == "The log reads <|tool_call_st"
    assert kinds(out)[-1] == "content_block_delta"


def test_what_the_upstream_sends_after_the_reply_asked_for_the_recovery_is_dropped():
    first = guard()
    played(first, wire_bytes(build(("text", [CALL]))))
    assert first.event(decode(wire_bytes(build(("text", [CLEAN]))))[3]) == []
    assert first.end() == []


def test_an_upstream_error_event_is_passed_on_ends_the_reply_and_is_never_recovered():
    events = build(("text", [CALL]))[:-2]
    events.append({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    raw = wire_bytes(events)
    one = guard()
    out = played(one, raw)
    assert out[-1] == wire_bytes(events[-1:])
    assert not one.recovering
    assert one.event(decode(raw)[0]) == []


def test_a_stream_the_server_saw_break_ends_with_the_error_event_once():
    one = guard()
    out: list[bytes] = []
    for piece in decode(wire_bytes(build(("text", ["Backups run ", "nightly."]))[:4])):
        out += one.event(piece)
    events = parsed(out + one.fail("The model's reply was cut off.", 502))
    assert events[-1] == {
        "type": "error",
        "error": {"type": "api_error", "message": "The model's reply was cut off."},
    }
    assert text_of(events) == "Backups run "
    assert one.fail("again", 502) == []


def test_a_refused_recovery_ends_the_first_stream_with_the_error_type_of_its_status():
    first = guard()
    before = played(first, wire_bytes(build(("text", [CALL]))))
    events = parsed(before + first.fail("Too many requests.", 429))
    assert events[-1]["error"]["type"] == "rate_limit_error"


# --- hostile events ---------------------------------------------------------------------------

HOSTILE = [
    "not json",
    "[1, 2]",
    "[" * 100_000,
    json.dumps({"type": "content_block_delta", "index": 0, "delta": 7}),
    json.dumps({"type": "content_block_delta", "index": "x", "delta": {"type": "text_delta"}}),
    json.dumps({"type": "content_block_delta", "delta": {"type": "text_delta", "text": CALL}}),
    json.dumps({"type": "content_block_delta", "index": 9, "delta": {"text": CALL}}),
    json.dumps({"type": "content_block_start", "index": True, "content_block": None}),
    json.dumps({"type": "content_block_start", "index": 5, "content_block": {"type": "text"}}),
    json.dumps({"type": "content_block_stop", "index": 7}),
    json.dumps({"type": ["not", "a", "type"], "delta": "x"}),
    json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}),
    json.dumps({"type": "message_start", "message": "nope"}),
]


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_event_never_breaks_the_guard_nor_lets_markup_through(data: str):
    events = build(("text", ["Back", CALL, "ups."]))
    raw = wire_bytes(events[:4]) + raw_event("x", data) + wire_bytes(events[4:])
    out = b"".join(played(guard(), raw))
    assert CALL.encode() not in out
    if not data.startswith("{"):
        assert raw_event("x", data) in out  # not ours to judge: passed on as it came


def test_a_ping_while_a_block_is_held_keeps_its_place_in_a_clean_stream():
    events = build(("text", [CLEAN]))
    events.insert(3, {"type": "ping"})  # between the block's start and its first text
    raw = wire_bytes(events)
    assert b"".join(played(guard(), raw)) == raw


def test_a_ping_among_a_dropped_blocks_events_still_goes_out():
    events = build(("text", [CALL[:5], CALL[5:]]), ("text", [CLEAN]))
    events.insert(4, {"type": "ping"})
    out = parsed(played(guard(), wire_bytes(events)))
    assert kinds(out)[:4] == ["message_start", "ping", "ping", "content_block_start"]
    assert block_types(out) == ["text"]


@pytest.mark.parametrize(
    "inserted",
    [raw_event("content_block_delta", "{not json"), wire_bytes([{"type": "error", "error": {}}])],
    ids=["not-json", "error"],
)
def test_an_error_or_an_event_that_is_not_json_lets_out_what_was_held_in_order(inserted: bytes):
    events = build(("text", [CLEAN]))
    raw = wire_bytes(events[:3]) + inserted + wire_bytes(events[3:])
    out = b"".join(played(guard(), raw))
    assert out.startswith(wire_bytes(events[:3]) + inserted)


def test_a_hostile_text_delta_of_a_block_never_started_is_filtered():
    text_delta = {"type": "text_delta", "text": f"Hi {CALL}"}
    delta: dict[str, Any] = {"type": "content_block_delta", "index": 3, "delta": text_delta}
    out = [json.loads(e.data) for e in decode(b"".join(played(guard(), wire_bytes([delta]))))]
    assert out == [{**delta, "index": 0, "delta": {"type": "text_delta", "text": "Hi "}}]


@given(st.lists(st.integers(0, 200), max_size=10))
def test_harmony_analysis_in_a_text_block_streams_as_a_thinking_block_before_it(cuts: list[int]):
    out = played(
        MessagesStreamGuard(registry_for("gpt-oss-20b")),
        wire_bytes(build(("text", pieces(HARMONY_REPLY, cuts)))),
    )
    events = parsed(out)
    assert block_types(events) == ["thinking", "text"]
    assert (text_of(events, "thinking"), text_of(events)) == (HARMONY_REASONING, HARMONY_ANSWER)


def test_a_whole_messages_harmony_analysis_becomes_a_thinking_block_before_its_text():
    answer = whole(text(HARMONY_REPLY))
    assert MessageGuard(registry_for("gpt-oss-20b")).filter(answer)
    assert answer["content"] == [
        {"type": "thinking", "thinking": HARMONY_REASONING, "signature": ""},
        {"type": "text", "text": HARMONY_ANSWER},
    ]


# --- whole ------------------------------------------------------------------------------------


def whole(*content: dict[str, Any]) -> dict[str, Any]:
    return {**message(FLOWS["clean"].steps[0], META, ASKED), "content": list(content)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


THINKING = {"type": "thinking", "thinking": CALL, "signature": "sig"}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": CALL}}


def test_a_whole_clean_message_is_left_alone():
    answer = whole(THINKING, text(CLEAN))
    one = MessageGuard(DEFAULT_REGISTRY)
    assert not one.filter(answer)
    assert answer["content"] == [THINKING, text(CLEAN)]
    assert not one.wants_recovery


def test_a_whole_message_has_its_text_filtered_and_its_emptied_blocks_taken_out():
    answer = whole(THINKING, text(f"Before. {CALL} After."), text(f" {CALL} "), TOOL_USE)
    one = MessageGuard(DEFAULT_REGISTRY)
    assert one.filter(answer)
    assert answer["content"] == [THINKING, text("Before.  After."), TOOL_USE]
    assert one.stripped_chars == 2 * len(CALL)
    assert one.tool_calls


def test_a_whole_message_of_markup_wants_the_recovery_and_one_of_markup_again_is_malformed():
    first = MessageGuard(DEFAULT_REGISTRY)
    first.filter(whole(text(CALL)))
    assert first.wants_recovery
    second = MessageGuard(DEFAULT_REGISTRY, follows=first)
    answer = whole(text(CALL))
    second.filter(answer)
    assert second.malformed
    assert answer["content"] == []
    clean = MessageGuard(DEFAULT_REGISTRY, follows=first)
    clean.filter(whole(text(CLEAN)))
    assert not clean.malformed


def test_a_whole_message_with_a_tool_use_needs_no_recovery():
    one = MessageGuard(DEFAULT_REGISTRY)
    one.filter(whole(text(CALL), TOOL_USE))
    assert not one.wants_recovery


@pytest.mark.parametrize("content", [None, "text", [7, None]], ids=["none", "a-string", "junk"])
def test_a_whole_message_without_text_blocks_is_left_alone(content: object):
    answer = {**whole(), "content": content}
    assert not MessageGuard(DEFAULT_REGISTRY).filter(answer)
    assert answer["content"] == content


# --- the recovery request ---------------------------------------------------------------------

TOOLS: dict[str, Any] = {"tools": [{"name": "read", "input_schema": {}}], "tool_choice": {}}


@pytest.mark.parametrize(
    ("system", "corrected"),
    [
        ("Be brief.", f"Be brief.\n\n{CORRECTION_INSTRUCTION}"),
        ([text("Be brief.")], [text("Be brief."), text(CORRECTION_INSTRUCTION)]),
        (None, CORRECTION_INSTRUCTION),
    ],
    ids=["text", "text-blocks", "none"],
)
def test_the_correction_goes_into_the_system_prompt_and_the_tools_are_removed(
    system: object, corrected: object
):
    body: dict[str, Any] = {"model": "m", "max_tokens": 9, "messages": ASKED, "stream": True}
    if system is not None:
        body["system"] = system
    recovery = recovery_body({**body, **TOOLS})
    assert recovery == {**body, "system": corrected}
    assert body.get("system") == system  # the client's body is untouched
