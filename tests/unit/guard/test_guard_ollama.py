"""guard.wire.ollama: Ollama's NDJSON lines and whole answers through the guardrail, pure."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guard.wire.ollama import (
    CHAT,
    GENERATE,
    NdjsonLines,
    OllamaApi,
    OllamaStreamGuard,
    OllamaWholeGuard,
    error_line,
    upstream_error_text,
)
from guardrail.model_profiles import registry_for
from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY, scrub
from guardrail.registries import DEFAULT_REGISTRY
from mock_llm import builtin_flows
from mock_llm.wire import ollama as ollama_wire
from mock_llm.wire.openai import CompletionMeta
from servekit.sse import LineTooLong

from ...support.families import hidden_canary
from ...support.ollama_generate import as_generate_line
from ..helpers.scaffolding import HARMONY_ANSWER, HARMONY_REASONING, HARMONY_REPLY, cut_anywhere
from .test_guard_responses import ANSWERED

START, END = "<|tool_call_start|>", "<|tool_call_end|>"
CALL = f"{START}[read(path='/homelab/x.md')]{END}"
CLEAN = "Backups run nightly at 02:00 with restic to the NAS, c > d & e, ünïcode 🚀."
"""Clean text: nothing in it could start a marker (a piece ending in `<` is held back)."""
HEAD = {"model": "m", "created_at": "2026-01-01T00:00:00.000000Z"}
CUT = "The model's reply was cut off."
APIS = pytest.mark.parametrize("api", [CHAT, GENERATE], ids=["chat", "generate"])
FLOWS = builtin_flows()


# --- building and reading lines ---------------------------------------------------------------


def go_json(obj: object) -> bytes:
    """JSON as Ollama (Go's encoding/json) writes it: compact, `<`, `>` and `&` escaped,
    other characters as they are; unlike the guard's own lines, so a line the guard wrote
    again cannot pass for the upstream's bytes."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def line(api: OllamaApi, text: str = "", *, done: bool = False, **fields: Any) -> bytes:
    """One line as Ollama writes it (`go_json`, `\\n`); `fields` go where the text is."""
    if api is GENERATE:
        obj: dict[str, Any] = {**HEAD, "response": text, **fields, "done": done}
    else:
        obj = {**HEAD, "message": {"role": "assistant", "content": text, **fields}, "done": done}
    if done:
        obj.update(done_reason="stop", eval_count=3)
    return go_json(obj) + b"\n"


def stream_of(api: OllamaApi, pieces: list[str]) -> list[bytes]:
    return [*(line(api, piece) for piece in pieces), line(api, done=True)]


def play(guard: OllamaStreamGuard, lines: list[bytes]) -> list[bytes]:
    out: list[bytes] = []
    for raw in lines:
        out += guard.line(raw)
    return out + guard.end(CUT)


def parsed(out: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in out]


def text_of(api: OllamaApi, out: list[bytes], key: str | None = None) -> str:
    key = key or api.text_key
    parts: list[str] = []
    for obj in parsed(out):
        holder = obj if api is GENERATE else obj.get("message", {})
        parts.append(holder.get(key) or "")
    return "".join(parts)


def rechunk(body: bytes, cuts: list[int]) -> list[bytes]:
    """`body` as the network might deliver it, cut at any byte (inside a character too)."""
    bounds = [0, *sorted(c % (len(body) + 1) for c in cuts), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def through(api: OllamaApi, pieces: list[bytes], guard: OllamaStreamGuard | None = None):
    """A body in network pieces through NdjsonLines and a guard: the bytes the client gets."""
    guard = guard or OllamaStreamGuard(DEFAULT_REGISTRY, api=api)
    lines = NdjsonLines()
    out: list[bytes] = []
    for piece in pieces:
        for raw in lines.feed(piece):
            out += guard.line(raw)
    for raw in lines.finish():
        out += guard.line(raw)
    return out + guard.end(CUT), guard


# --- the line decoder -------------------------------------------------------------------------


@given(st.binary(max_size=300), st.lists(st.integers(0, 400), max_size=10))
def test_the_lines_of_any_body_at_any_chunking_are_its_bytes_in_order(body: bytes, cuts: list[int]):
    lines = NdjsonLines()
    got: list[bytes] = []
    for piece in rechunk(body, cuts):
        got += lines.feed(piece)
    got += lines.finish()
    assert b"".join(got) == body
    assert all(raw.endswith(b"\n") for raw in got[:-1])
    assert all(b"\n" not in raw[:-1] for raw in got)


@pytest.mark.parametrize(
    "pieces",
    [[b"x" * 65], [b"x" * 40, b"x" * 25], [b"ok\n" + b"x" * 65 + b"\n"]],
    ids=["one-piece", "many-pieces", "inside-a-piece"],
)
def test_a_line_past_the_limit_is_refused_not_grown(pieces: list[bytes]):
    lines = NdjsonLines(max_line_bytes=64)
    for piece in pieces[:-1]:
        assert lines.feed(piece) == []
    with pytest.raises(LineTooLong):
        lines.feed(pieces[-1])


def test_a_line_at_the_limit_is_read():
    assert NdjsonLines(max_line_bytes=64).feed(b"x" * 64 + b"\n") == [b"x" * 64 + b"\n"]


# --- clean streams go out byte for byte ---------------------------------------------------------


@APIS
@given(st.lists(st.integers(0, 200), max_size=12), st.lists(st.integers(0, 3000), max_size=12))
def test_a_clean_stream_goes_out_as_the_upstreams_own_bytes_at_any_chunking(
    api: OllamaApi, text_cuts: list[int], byte_cuts: list[int]
):
    body = b"".join(stream_of(api, cut_anywhere(CLEAN, text_cuts)))
    out, guard = through(api, rechunk(body, byte_cuts))
    assert b"".join(out) == body
    assert (guard.stripped_chars, guard.recovering) == (0, False)


@APIS
@given(st.lists(st.integers(0, 200), max_size=12))
def test_look_alikes_reach_the_client_whole_at_any_chunking(api: OllamaApi, cuts: list[int]):
    """A piece that ends in what could start a marker is held until the next one shows it
    is not (so line boundaries may move), but not a character is lost or added."""
    text = "tool_call_start is a word, <|some_other_token|>, a lone <|tool_call_end|>, a < b."
    out = play(
        OllamaStreamGuard(DEFAULT_REGISTRY, api=api), stream_of(api, cut_anywhere(text, cuts))
    )
    assert text_of(api, out) == text
    assert [obj["done"] for obj in parsed(out)][-1] is True


# --- markup is filtered the same at any chunking -------------------------------------------------


@APIS
@given(
    st.lists(st.integers(0, 200), max_size=12),
    st.lists(st.integers(0, 3000), max_size=8),
    st.sampled_from(
        [
            f"Before. {CALL} After.",
            f"{CALL}Answer.",
            f"Text <|tool_calls|> more {CALL}",
            f"Prose, then {START}[read(path='/never/ends')",
            "It ends in a partial <|tool_call_st",
        ]
    ),
)
def test_the_client_sees_the_filtered_text_at_any_chunking(
    api: OllamaApi, text_cuts: list[int], byte_cuts: list[int], text: str
):
    body = b"".join(stream_of(api, cut_anywhere(text, text_cuts)))
    out, guard = through(api, rechunk(body, byte_cuts))
    assert text_of(api, out) == scrub(text, DEFAULT_REGISTRY)
    objs = parsed(out)
    assert [obj["done"] for obj in objs].count(True) == 1
    assert objs[-1]["done"] is True
    assert objs[-1]["done_reason"] == "stop"  # the upstream's own last line, with its counters
    assert guard.stripped_chars == len(text) - len(scrub(text, DEFAULT_REGISTRY))


def mock_lines(name: str, api: OllamaApi, step_index: int = 0) -> list[bytes]:
    """The mock's own Ollama lines of the flow's step (as /api/generate lines for that API)."""
    frames = ollama_wire.chat_lines(FLOWS[name].steps[step_index], CompletionMeta("c", 0, "m"), [])
    raws = [raw for _, raw in frames]
    return raws if api is CHAT else [as_generate_line(raw) for raw in raws]


@pytest.mark.parametrize(
    ("name", "api"),
    [
        pytest.param(name, api, id=f"{name}-{api.name}")
        for name, flow in sorted(FLOWS.items())
        if flow.expect is not None and flow.steps[0].fault is None
        for api in ((CHAT,) if flow.steps[0].tool_calls else (CHAT, GENERATE))  # no tools there
    ],
)
def test_each_flows_first_answer_shows_what_its_expect_block_says(name: str, api: OllamaApi):
    """The mock's own Ollama lines of a flow (turned into /api/generate lines for that
    API), then the recovery's where one is due: the text the client is left with."""
    flow = FLOWS[name]
    expect = flow.expect_for("m")  # judged under auto's registry for the model asked for
    assert expect is not None
    registry = registry_for("m")

    def lines_of(step_index: int) -> list[bytes]:
        return mock_lines(name, api, step_index)

    first = OllamaStreamGuard(registry, api=api)
    out = play(first, lines_of(0))
    assert first.recovering == expect.recovery
    stripped = first.stripped_chars
    if expect.recovery:
        assert out == []  # not a line of a reply that is all markup reaches the client
        second = OllamaStreamGuard(registry, api=api, follows=first)
        out = play(second, lines_of(1))
        stripped += second.stripped_chars
    if expect.error == "malformed":
        assert out[-1] == error_line(MALFORMED_REPLY)
        assert text_of(api, out[:-1]) == ""
        assert stripped == expect.stripped_chars
        return
    assert parsed(out)[-1]["done"] is True
    if not flow.steps[0].tool_calls:  # a tool round's answer comes in the client's next turn
        assert text_of(api, out) == expect.shown
        assert stripped == expect.stripped_chars
    if canary := hidden_canary(flow, "m"):
        assert canary not in b"".join(out).decode()


@pytest.mark.parametrize(
    ("name", "api"),
    [
        pytest.param(name, api, id=f"{name}-{api.name}")
        for name in ANSWERED
        if FLOWS[name].expect is None
        for api in ((CHAT,) if FLOWS[name].steps[0].tool_calls else (CHAT, GENERATE))
    ],
)
def test_each_flow_without_an_expect_block_goes_out_as_the_mock_sent_it(name: str, api: OllamaApi):
    """No markup in its answer (test_flow_expectations.py): line for line, nothing stripped."""
    lines = mock_lines(name, api)
    guard = OllamaStreamGuard(registry_for("m"), api=api)
    assert play(guard, lines) == lines
    assert (guard.recovering, guard.stripped_chars) == (False, 0)


# --- what is never filtered ---------------------------------------------------------------------


@APIS
@given(st.lists(st.integers(0, 200), max_size=12))
def test_thinking_is_never_filtered_at_any_chunking(api: OllamaApi, cuts: list[int]):
    thinking = f"I could call {CALL} but I answer directly."
    lines = [line(api, thinking=piece) for piece in cut_anywhere(thinking, cuts)]
    lines += stream_of(api, ["Answer."])
    out = play(OllamaStreamGuard(DEFAULT_REGISTRY, api=api), lines)
    assert out == lines


@APIS
@given(st.lists(st.integers(0, 200), max_size=12))
def test_harmony_analysis_in_the_text_goes_out_as_thinking_at_any_chunking(
    api: OllamaApi, cuts: list[int]
):
    guard = OllamaStreamGuard(registry_for("gpt-oss:20b"), api=api)
    out = play(guard, stream_of(api, cut_anywhere(HARMONY_REPLY, cuts)))
    assert text_of(api, out) == HARMONY_ANSWER
    assert text_of(api, out, "thinking") == HARMONY_REASONING


@APIS
def test_a_whole_answers_harmony_analysis_joins_its_thinking(api: OllamaApi):
    answer = json.loads(line(api, HARMONY_REPLY, done=True, thinking="Own. "))
    assert OllamaWholeGuard(registry_for("gpt-oss:20b"), api=api).filter(answer)
    holder = answer if api is GENERATE else answer["message"]
    assert (holder[api.text_key], holder["thinking"]) == (
        HARMONY_ANSWER,
        "Own. " + HARMONY_REASONING,
    )


def test_a_tool_call_goes_out_as_it_came_and_needs_no_recovery_whatever_was_stripped():
    calls = [{"function": {"name": "read", "arguments": {"path": "/homelab/x.md"}}}]
    tool_line = line(CHAT, tool_calls=calls)
    guard = OllamaStreamGuard(DEFAULT_REGISTRY)
    out = play(guard, [line(CHAT, CALL), tool_line, line(CHAT, done=True)])
    assert out == [tool_line, line(CHAT, done=True)]
    assert guard.stripped_chars == len(CALL)
    assert not guard.recovering


# --- the one recovery and the malformed reply -----------------------------------------------------


@APIS
def test_a_reply_of_nothing_but_markup_sends_nothing_and_asks_for_the_recovery(api: OllamaApi):
    guard = OllamaStreamGuard(DEFAULT_REGISTRY, api=api)
    assert play(guard, stream_of(api, [CALL[:10], CALL[10:]])) == []
    assert guard.recovering
    assert guard.wants_recovery
    assert guard.stripped_chars == len(CALL)


@APIS
def test_a_recovery_continues_the_stream_with_one_done_line(api: OllamaApi):
    first = OllamaStreamGuard(DEFAULT_REGISTRY, api=api)
    play(first, stream_of(api, [CALL]))
    second = OllamaStreamGuard(DEFAULT_REGISTRY, api=api, follows=first)
    lines = stream_of(api, ["Back", "ups run."])
    assert play(second, lines) == lines
    assert not second.malformed


@APIS
def test_a_recovery_that_shows_nothing_ends_in_the_malformed_reply_error_line(api: OllamaApi):
    first = OllamaStreamGuard(DEFAULT_REGISTRY, api=api)
    play(first, stream_of(api, [CALL]))
    second = OllamaStreamGuard(DEFAULT_REGISTRY, api=api, follows=first)
    out = play(second, stream_of(api, [CALL, "  "]))
    assert out[-1] == error_line(MALFORMED_REPLY)  # in place of the done line
    assert json.loads(out[-1]) == {"error": MALFORMED_REPLY}
    assert text_of(api, out[:-1]).isspace()  # what it showed was not visible
    assert all(obj["done"] is False for obj in parsed(out[:-1]))
    assert second.malformed


def test_with_several_requests_recovered_none_gets_a_second_recovery():
    first = OllamaStreamGuard(DEFAULT_REGISTRY)
    play(first, stream_of(CHAT, [CALL]))
    second = OllamaStreamGuard(DEFAULT_REGISTRY, follows=first)
    play(second, stream_of(CHAT, [CALL]))
    assert not second.recovering


# --- the end of a stream ----------------------------------------------------------------------


@APIS
def test_a_partial_marker_held_at_the_end_goes_out_with_the_done_line(api: OllamaApi):
    out = play(OllamaStreamGuard(DEFAULT_REGISTRY, api=api), stream_of(api, ["It reads <|tool"]))
    objs = parsed(out)
    assert text_of(api, out) == "It reads <|tool"
    assert (objs[-1]["done"], objs[-1]["done_reason"]) == (True, "stop")
    holder = objs[-1] if api is GENERATE else objs[-1]["message"]
    assert holder[api.text_key] == "<|tool"


def test_a_done_line_without_a_message_gets_the_held_text_in_a_line_before_it():
    done = json.dumps({**HEAD, "done": True, "done_reason": "stop"}).encode() + b"\n"
    out = play(OllamaStreamGuard(DEFAULT_REGISTRY), [line(CHAT, "a <|tool"), done])
    assert out[-1] == done
    assert text_of(CHAT, out) == "a <|tool"


@APIS
def test_a_stream_cut_before_its_done_line_ends_with_the_held_text_and_an_error_line(
    api: OllamaApi,
):
    guard = OllamaStreamGuard(DEFAULT_REGISTRY, api=api)
    out = guard.line(line(api, "It reads <|tool"))
    rest = guard.end(CUT)
    assert rest[-1] == error_line(CUT)
    assert text_of(api, out + rest[:-1]) == "It reads <|tool"
    assert guard.end(CUT) == []  # said once


def test_a_cut_reply_of_nothing_but_markup_is_a_cut_not_a_recovery():
    guard = OllamaStreamGuard(DEFAULT_REGISTRY)
    assert guard.line(line(CHAT, CALL)) == []
    assert guard.end(CUT) == [error_line(CUT)]
    assert not guard.recovering


def test_an_upstream_error_line_goes_out_as_it_came_after_the_held_text():
    error = b'{"error":"The model crashed."}\n'
    guard = OllamaStreamGuard(DEFAULT_REGISTRY)
    out = guard.line(line(CHAT, "Backups <|tool"))
    out += guard.line(error)
    assert out[-1] == error
    assert text_of(CHAT, out[:-1]) == "Backups <|tool"
    assert guard.finished
    assert guard.end(CUT) == []


def test_nothing_after_the_done_line_is_sent():
    guard = OllamaStreamGuard(DEFAULT_REGISTRY)
    play(guard, stream_of(CHAT, ["Answer."]))
    assert guard.line(line(CHAT, "more")) == []


# --- hostile lines --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"not json\n",
        b"[1, 2]\n",
        b"42\n",
        b"null\n",
        b"\n",
        b"[" * 100_000 + b"\n",
        b'{"message": "a string", "done": false}\n',
        b'{"message": {"content": 7}, "done": false}\n',
        b'{"message": {"content": null}, "done": true}\n',
        b'{"response": ["x"], "done": false}\n',
    ],
    ids=[
        "not-json",
        "array",
        "number",
        "null",
        "blank",
        "deeply-nested",
        "message-not-object",
        "content-not-text",
        "content-null",
        "response-not-text",
    ],
)
@APIS
def test_a_line_that_is_not_an_ollama_line_goes_out_as_it_came(api: OllamaApi, raw: bytes):
    assert OllamaStreamGuard(DEFAULT_REGISTRY, api=api).line(raw) == [raw]


@APIS
def test_a_line_that_is_not_utf8_goes_out_with_replacement_characters(api: OllamaApi):
    assert OllamaStreamGuard(DEFAULT_REGISTRY, api=api).line(b"\xff\xfe{\n") == [
        "\ufffd\ufffd{\n".encode()
    ]


@APIS
def test_a_line_with_invalid_utf8_is_still_filtered(api: OllamaApi):
    text = b"caf\xff <|tool_call_start|>[read()]<|tool_call_end|>done"
    line = {"response": "@"} if api is GENERATE else {"message": {"content": "@"}}
    raw = json.dumps({**line, "done": False}).encode().replace(b"@", text)
    (out,) = OllamaStreamGuard(DEFAULT_REGISTRY, api=api).line(raw + b"\n")
    holder = api.holder(json.loads(out))
    assert holder is not None
    assert holder[api.text_key] == "caf\ufffd done"


@APIS
def test_a_huge_clean_line_goes_out_byte_for_byte(api: OllamaApi):
    lines = stream_of(api, [CLEAN * 20_000])  # about 1.5 MB of text in one line
    out, _ = through(api, [b"".join(lines)])
    assert out == lines


def test_a_huge_line_with_markup_is_filtered():
    text = CLEAN * 10_000
    out = play(OllamaStreamGuard(DEFAULT_REGISTRY), stream_of(CHAT, [text + CALL + text]))
    assert text_of(CHAT, out) == text + text


def test_a_lone_surrogate_in_a_changed_line_is_written_as_its_escape():
    content = b'"\\ud800 ' + CALL.encode() + b'"'
    raw = b'{"message":{"role":"assistant","content":' + content + b'},"done":true}\n'
    [out] = OllamaStreamGuard(DEFAULT_REGISTRY).line(raw)
    assert b"\\ud800" in out
    assert json.loads(out)["message"]["content"] == "\ud800 "


# --- whole answers --------------------------------------------------------------------------------


def whole(api: OllamaApi, text: object, **fields: Any) -> dict[str, Any]:
    if api is GENERATE:
        return {**HEAD, "response": text, **fields, "done": True, "done_reason": "stop"}
    message = {"role": "assistant", "content": text, **fields}
    return {**HEAD, "message": message, "done": True, "done_reason": "stop"}


@APIS
@pytest.mark.parametrize(
    ("text", "shown", "recovery"),
    [
        (CLEAN, CLEAN, False),
        (f"Before. {CALL} After.", "Before.  After.", False),
        (CALL, "", True),
        (f"  {CALL}\n", "  \n", True),
        ("It reads <|tool_call_st", "It reads <|tool_call_st", False),
        (f"Prose. {START}[never(ends)", "Prose. ", False),
    ],
    ids=["clean", "mixed", "all-markup", "markup-and-whitespace", "partial-tail", "unterminated"],
)
def test_a_whole_answer_is_filtered_as_one_stream(
    api: OllamaApi, text: str, shown: str, recovery: bool
):
    answer = whole(api, text)
    guard = OllamaWholeGuard(DEFAULT_REGISTRY, api=api)
    assert guard.filter(answer) == (shown != text)
    holder = answer if api is GENERATE else answer["message"]
    assert holder[api.text_key] == shown
    assert guard.wants_recovery == recovery
    assert guard.stripped_chars == len(text) - len(shown)


@APIS
def test_a_whole_answers_thinking_is_left_alone(api: OllamaApi):
    answer = whole(api, "Answer.", thinking=CALL)
    assert not OllamaWholeGuard(DEFAULT_REGISTRY, api=api).filter(answer)
    holder = answer if api is GENERATE else answer["message"]
    assert holder["thinking"] == CALL


def test_a_whole_answer_with_a_tool_call_needs_no_recovery():
    calls = [{"function": {"name": "read", "arguments": {}}}]
    guard = OllamaWholeGuard(DEFAULT_REGISTRY)
    assert guard.filter(whole(CHAT, CALL, tool_calls=calls))
    assert not guard.wants_recovery


def test_a_whole_recovery_that_shows_nothing_is_malformed():
    first = OllamaWholeGuard(DEFAULT_REGISTRY)
    first.filter(whole(CHAT, CALL))
    second = OllamaWholeGuard(DEFAULT_REGISTRY, follows=first)
    second.filter(whole(CHAT, CALL))
    assert second.malformed
    third = OllamaWholeGuard(DEFAULT_REGISTRY, follows=first)
    third.filter(whole(CHAT, "Answer."))
    assert not third.malformed


@pytest.mark.parametrize(
    "answer",
    [{}, {"message": "text"}, {"message": {"content": 3}}, {"response": None}],
    ids=["empty", "message-not-object", "content-not-text", "response-null"],
)
@APIS
def test_a_whole_answer_without_text_is_left_as_it_came(api: OllamaApi, answer: dict[str, Any]):
    before = json.dumps(answer)
    guard = OllamaWholeGuard(DEFAULT_REGISTRY, api=api)
    assert not guard.filter(answer)
    assert json.dumps(answer) == before
    assert not guard.wants_recovery


# --- the recovery request ---------------------------------------------------------------------


def test_a_chat_recovery_folds_the_correction_into_the_system_message_and_drops_tools():
    body: dict[str, Any] = {
        "model": "m",
        "stream": True,
        "think": True,
        "options": {"temperature": 0},
        "tools": [{"type": "function", "function": {"name": "read"}}],
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "When?"},
        ],
    }
    recovery = CHAT.recovery_body(body)
    assert "tools" not in recovery
    assert recovery["messages"] == [
        {"role": "system", "content": f"Be brief.\n\n{CORRECTION_INSTRUCTION}"},
        {"role": "user", "content": "When?"},
    ]
    assert {k: recovery[k] for k in ("model", "stream", "think", "options")} == {
        k: body[k] for k in ("model", "stream", "think", "options")
    }
    assert body["messages"][0]["content"] == "Be brief."  # the client's body is not changed


def test_a_chat_recovery_without_a_system_message_gets_one_first():
    recovery = CHAT.recovery_body({"messages": [{"role": "user", "content": "When?"}]})
    assert recovery["messages"][0] == {"role": "system", "content": CORRECTION_INSTRUCTION}
    assert recovery["messages"][-1] == {"role": "user", "content": "When?"}


@pytest.mark.parametrize(
    ("system", "corrected"),
    [
        ("Be brief.", f"Be brief.\n\n{CORRECTION_INSTRUCTION}"),
        (None, CORRECTION_INSTRUCTION),
        (42, CORRECTION_INSTRUCTION),
    ],
    ids=["own-system", "no-system", "system-not-text"],
)
def test_a_generate_recovery_puts_the_correction_into_system(system: object, corrected: str):
    body: dict[str, Any] = {"model": "m", "prompt": "When do backups run?", "raw": False}
    if system is not None:
        body["system"] = system
    recovery = GENERATE.recovery_body(body)
    assert recovery == {**body, "system": corrected}


def test_a_recovery_of_a_body_whose_messages_are_not_a_list_keeps_them():
    assert CHAT.recovery_body({"messages": "x", "tools": []}) == {"messages": "x"}


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b'{"error": "model not found"}', "model not found"),
        (b'{"error": {"message": "Rate limit reached"}}', "Rate limit reached"),
        (b'{"error": ""}', "The model server answered 503."),
        (b"<html>Bad gateway</html>", "The model server answered 503."),
        (b"", "The model server answered 503."),
    ],
    ids=["ollama", "openai-shape", "empty", "not-json", "no-body"],
)
def test_an_upstream_error_says_its_own_message(raw: bytes, text: str):
    assert upstream_error_text(raw, 503) == text
