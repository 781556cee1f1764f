"""The chat stream's clean reads: passed on as their bytes, undecoded, exactly where decoding
them could change nothing (guard.wire.chat_stream.StreamGuard.passes, guard.relay._round).

The property at the end is the guarantee: for any chat stream and any way its bytes arrive,
the client gets the same bytes, settles at the same point and is told the same count,
whether clean reads pass undecoded or every read is decoded.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guard.relay import Fault, Tally, streamed
from guard.wire.apis import CHAT_COMPLETIONS
from guard.wire.chat_stream import StreamGuard
from guard.wire.rounds import ChatRound
from guardrail.model_profiles import registry_for
from guardrail.registries import DEFAULT_REGISTRY
from servekit.sse import SseDecoder

from .test_guard_stream import CALL, META, chunk
from .test_relay import BODY, drive, shown, sse

LIMIT = 1 << 20


def shown_guard(text: str = "Backups run nightly.") -> StreamGuard:
    """A first reply's guard whose one choice has shown `text`."""
    guard = StreamGuard(DEFAULT_REGISTRY)
    guard.chunk(chunk({"role": "assistant", "content": text}))
    return guard


def events(*payloads: str) -> bytes:
    return b"".join(f"data: {p}\n\n".encode() for p in payloads)


CLEAN = events(chunk({"content": " at 02:00"}), chunk({"content": " with restic."}))


def test_a_read_of_clean_chunks_after_shown_text_passes_as_its_bytes():
    guard = shown_guard()
    assert guard.passes(CLEAN, LIMIT)
    out: list[bytes] = []
    for payload in CLEAN.decode().split("\n\n")[:-1]:
        out += guard.chunk(payload.removeprefix("data: "))
    assert b"".join(out) == CLEAN  # what decoding it would have given


@pytest.mark.parametrize(
    ("why", "piece"),
    [
        ("the quiet character", events(chunk({"content": " a <b> tag"}))),
        ("its escape", events(chunk({"content": " a \\u003cb\\u003e tag"}).replace("\\\\", "\\"))),
        ("its escape, capitals", events(chunk({"content": " \\u003Cb"}).replace("\\\\", "\\"))),
        ("another choice", events(json.dumps({**META, "choices": [
            {"index": 1, "delta": {"content": "x"}, "finish_reason": None}]}))),
        ("tool calls", events(chunk({"tool_calls": [{"index": 0, "function": {"name": "f"}}]}))),
        ("the stream's end", CLEAN + b"data: [DONE]\n\n"),
        ("a part of an event", CLEAN[:-1]),
    ],
)  # fmt: skip
def test_a_read_that_decoding_could_change_is_decoded(why: str, piece: bytes):
    assert not shown_guard().passes(piece, LIMIT), why


def test_nothing_passes_undecoded_before_the_reply_has_shown_text():
    """The reply may still be nothing but markup (the one recovery): every chunk is read."""
    guard = StreamGuard(DEFAULT_REGISTRY)
    guard.chunk(chunk({"role": "assistant", "content": "  "}))
    assert not guard.passes(CLEAN, LIMIT)


def test_nothing_passes_undecoded_while_the_filter_holds_a_possible_opener():
    guard = shown_guard("Backups run nightly. <|tool")
    assert not guard.passes(CLEAN, LIMIT)


def test_nothing_passes_undecoded_inside_a_span():
    guard = shown_guard("Backups run nightly. <|tool_call_start|>[read(")
    assert not guard.passes(CLEAN, LIMIT)


def test_the_recoverys_stream_is_always_decoded():
    """Its chunks take the first reply's identity and lose their role."""
    first = shown_guard()
    recovery = StreamGuard(DEFAULT_REGISTRY, follows=first)
    recovery.chunk(chunk({"role": "assistant", "content": "Backups run nightly."}))
    assert not recovery.passes(CLEAN, LIMIT)


def test_a_chat_round_after_its_done_line_passes_nothing():
    round_ = ChatRound(shown_guard())
    round_.done = True
    assert not round_.passes(CLEAN, LIMIT)


def test_the_relay_passes_a_streams_clean_reads_after_its_first_text_undecoded(monkeypatch):
    decoded: list[bytes] = []
    feed = SseDecoder.feed
    monkeypatch.setattr(
        SseDecoder, "feed", lambda self, piece: decoded.append(piece) or feed(self, piece)
    )
    first = events(chunk({"role": "assistant", "content": "Backups run nightly."}))
    done = b"data: [DONE]\n\n"
    out, _, _ = drive(streamed(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, Tally()),
                      [first, CLEAN, CLEAN, done], [])  # fmt: skip
    assert decoded == [first, done]
    assert shown(out) == first + CLEAN + CLEAN + done


def test_a_read_that_begins_and_ends_inside_events_passes_the_whole_events_between(monkeypatch):
    """Under load a read seldom ends between events: the end of the event the read before
    left unfinished, and the start of the next, are decoded; the run between them passes."""
    decoded: list[bytes] = []
    feed = SseDecoder.feed
    monkeypatch.setattr(
        SseDecoder, "feed", lambda self, piece: decoded.append(piece) or feed(self, piece)
    )
    first = events(chunk({"role": "assistant", "content": "Backups run nightly."}))
    more = events(chunk({"content": " Restores"}))
    stream = first + more + CLEAN + more + b"data: [DONE]\n\n"
    assert len(more) > 10
    cut_1, cut_2 = len(first) + 10, len(first + more + CLEAN) + 10
    reads: list[bytes | Fault] = [stream[:cut_1], stream[cut_1:cut_2], stream[cut_2:]]
    out, _, _ = drive(streamed(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, Tally()), reads, [])
    assert shown(out) == stream
    done = b"data: [DONE]\n\n"
    assert decoded == [first, more[:10], more[10:], more[:10], more[10:], done]  # CLEAN passed


# --- the guarantee ---------------------------------------------------------------------------

WORDS = [" run", " nightly", " at 02:00.", " ", "\n", "é", "|", "[read(path='/x.md')]",
         "a \\ b", '"q"']  # fmt: skip
MARKUP = ["<", "<b>", "<|tool_call", "_start|>", CALL, "<|tool_call_end|>", "\u003c"]
PIECES = WORDS * 3 + MARKUP
"""A chunk's content: mostly text, as a reply mostly is, and markup or its pieces."""


@st.composite
def chat_streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """A chat completion stream's bytes (its content from PIECES, sometimes JSON-escaped
    as Python writes it, sometimes a second choice or a tool call among them) and where
    its reads are cut."""
    payloads = [chunk({"role": "assistant", "content": ""})]
    first = draw(st.sampled_from(["Backups", " ", "<|tool_call_start|>"]))  # shown or not
    for piece in [first, *draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=14))]:
        body: dict[str, Any] = {**META, "choices": [
            {"index": 0, "delta": {"content": piece}, "finish_reason": None}]}  # fmt: skip
        kind = draw(st.sampled_from(["plain"] * 4 + ["escaped", "second choice", "tool"]))
        if kind == "second choice":
            body["choices"].append({"index": 1, "delta": {"content": piece}, "finish_reason": None})
        elif kind == "tool":
            body["choices"][0]["delta"]["tool_calls"] = [{"index": 0, "id": "c", "type": "function",
                                                         "function": {"name": "read"}}]  # fmt: skip
        payloads.append(json.dumps(body, ensure_ascii=kind == "escaped", separators=(",", ":")))
    payloads.append(chunk({}, "stop"))
    raw = sse(payloads, done=draw(st.booleans()))
    # Reads end between events as a server writes them (the reads that may pass undecoded),
    # and anywhere else too.
    ends = [i + 2 for i in range(len(raw) - 1) if raw[i : i + 2] == b"\n\n"][:-1]
    cuts = [end for end in ends if draw(st.booleans())]
    cuts += draw(st.lists(st.integers(1, len(raw) - 1), max_size=3))
    return raw, sorted(set(cuts))


def through_the_relay(raw: bytes, cuts: list[int], model: str) -> tuple[bytes, int, int]:
    reads = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    tally = Tally()
    flow = streamed(CHAT_COMPLETIONS, registry_for(model), BODY, tally)
    out, _, _ = drive(flow, [r for r in reads if r], [[sse([chunk({"content": "ok"}, "stop")])]])
    return out, tally.stripped, tally.recoveries


@given(chat_streams(), st.sampled_from(["m", "lfm2-1.2b", "qwen3-8b", "gpt-oss-20b"]))
def test_any_stream_in_any_reads_gives_the_client_the_same_as_decoding_every_read(
    stream: tuple[bytes, list[int]], model: str
):
    raw, cuts = stream
    fast = through_the_relay(raw, cuts, model)
    original = ChatRound.passes
    ChatRound.passes = lambda self, piece, max_event_bytes: False  # type: ignore[method-assign]
    try:
        decoded = through_the_relay(raw, cuts, model)
    finally:
        ChatRound.passes = original  # type: ignore[method-assign]
    assert fast == decoded
