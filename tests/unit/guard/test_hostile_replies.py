"""The guard's pure reply guards under a hostile model server (issue 27): an opener with no
end marker over many chunks keeps nothing per chunk, on every route's guard; a reply with
more texts than MAX_TEXTS stops being filtered with TooManyTexts; invalid UTF-8 reads as
U+FFFD.

"Keeps nothing per chunk" is measured with tracemalloc: what the guard holds after a few
hundred chunks of a span's inside is what it holds after twenty times more. Megabytes of
it, at the guard proxy's peak RSS: `uv run python benchmarks/hostile_upstream.py`.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from guard.wire.chat_stream import StreamGuard
from guard.wire.messages_stream import MessagesStreamGuard
from guard.wire.ollama import CHAT, OllamaStreamGuard
from guard.wire.reply import MAX_TEXTS, TooManyTexts
from guard.wire.responses_stream import ResponsesStreamGuard
from guardrail.registries import DEFAULT_REGISTRY
from guardrail.scaffolding import PREVIEW_CHARS
from servekit.json_codec import utf8_repaired
from servekit.sse import SseEvent

START = "<|tool_call_start|>"
INSIDE = "[read(path='/homelab/a-very-long-argument.md', n=1)] and on and on "
"""A span's inside with no end marker, and `<` in none of it (the end marker's first char)."""
WARM, LONG = 200, 4_000
GROWTH_BYTES = 16 * 1024
"""What four thousand more chunks may add to the guard: allocator noise (tens of bytes when
measured), never a chunk's worth each: a list slot per chunk would be 32 KB, a string per
chunk hundreds of kilobytes."""


def chat_chunk(text: str, index: int = 0) -> str:
    choice = {"index": index, "delta": {"content": text}, "finish_reason": None}
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})


def responses_delta(text: str) -> SseEvent:
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0}
    delta |= {"content_index": 0, "delta": text, "sequence_number": 3}
    return SseEvent("response.output_text.delta", json.dumps(delta))


def messages_delta(text: str) -> SseEvent:
    delta: dict[str, Any] = {"type": "content_block_delta", "index": 0}
    delta["delta"] = {"type": "text_delta", "text": text}
    return SseEvent("content_block_delta", json.dumps(delta))


def chat_guard() -> Callable[[str], object]:
    guard = StreamGuard(DEFAULT_REGISTRY)
    return lambda text: (guard.chunk(chat_chunk(text)), guard)


def responses_guard() -> Callable[[str], object]:
    guard = ResponsesStreamGuard(DEFAULT_REGISTRY)
    return lambda text: (guard.event(responses_delta(text)), guard)


def messages_guard() -> Callable[[str], object]:
    guard = MessagesStreamGuard(DEFAULT_REGISTRY)
    start: dict[str, Any] = {"type": "content_block_start", "index": 0}
    start["content_block"] = {"type": "text", "text": ""}
    guard.event(SseEvent("content_block_start", json.dumps(start)))
    return lambda text: (guard.event(messages_delta(text)), guard)


def ollama_guard() -> Callable[[str], object]:
    guard = OllamaStreamGuard(DEFAULT_REGISTRY, api=CHAT)
    line = {"model": "m", "message": {"role": "assistant", "content": "@"}, "done": False}
    raw = json.dumps(line).encode()
    return lambda text: (guard.line(raw.replace(b"@", text.encode())), guard)


GUARDS = pytest.mark.parametrize(
    "feeder",
    [chat_guard, responses_guard, messages_guard, ollama_guard],
    ids=["chat", "responses", "messages", "ollama"],
)


def held_after(feed: Callable[[str], object], chunks: int) -> int:
    """The memory tracemalloc sees allocated once `chunks` more chunks of the span went in."""
    for _ in range(chunks):
        feed(INSIDE)
    return tracemalloc.get_traced_memory()[0]


@GUARDS
def test_an_opener_with_no_end_marker_keeps_nothing_per_chunk(
    feeder: Callable[[], Callable[[str], Any]],
):
    feed = feeder()
    tracemalloc.start()
    try:
        out, guard = feed(START)
        assert not out
        warm = held_after(feed, WARM)
        grown = held_after(feed, LONG) - warm
    finally:
        tracemalloc.stop()
    assert grown < GROWTH_BYTES
    assert guard.stripped_chars == len(START) + (WARM + LONG) * len(INSIDE)
    assert len(guard.first_span) <= PREVIEW_CHARS
    assert len(guard.filters) == 1


def test_a_stream_that_was_an_unended_span_to_its_end_gets_the_one_recovery():
    guard = StreamGuard(DEFAULT_REGISTRY)
    for text in [START, *[INSIDE] * 1000]:
        assert guard.chunk(chat_chunk(text)) == []
    assert guard.end(done=True) is None
    assert guard.recovering


def test_a_stream_filters_up_to_max_texts_choices():
    guard = StreamGuard(DEFAULT_REGISTRY, single_choice=False)
    for index in range(MAX_TEXTS):
        assert guard.chunk(chat_chunk(f"{START}x", index)) == []
    assert len(guard.by_choice) == MAX_TEXTS


def test_one_choice_past_max_texts_raises_too_many_texts_naming_the_bound():
    guard = StreamGuard(DEFAULT_REGISTRY, single_choice=False)
    for index in range(MAX_TEXTS):
        guard.chunk(chat_chunk("a", index))
    with pytest.raises(TooManyTexts, match=f"more than {MAX_TEXTS} choices"):
        guard.chunk(chat_chunk("a", MAX_TEXTS))
    assert len(guard.filters) == MAX_TEXTS


def test_choices_without_content_cost_no_filter():
    guard = StreamGuard(DEFAULT_REGISTRY, single_choice=False)
    for index in range(10 * MAX_TEXTS):
        guard.chunk(chat_chunk("", index))
    assert guard.filters == []


def test_a_responses_stream_with_more_parts_than_max_texts_raises_too_many_texts():
    guard = ResponsesStreamGuard(DEFAULT_REGISTRY)
    for index in range(MAX_TEXTS):
        event = json.loads(responses_delta("a").data) | {"output_index": index}
        guard.event(SseEvent(None, json.dumps(event)))
    event = json.loads(responses_delta("a").data) | {"output_index": MAX_TEXTS}
    with pytest.raises(TooManyTexts):
        guard.event(SseEvent(None, json.dumps(event)))


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        (b"caf\xc3\xa9", b"caf\xc3\xa9"),
        (b"caf\xff", "caf\ufffd".encode()),
        (b"\xc3", "\ufffd".encode()),
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd".encode()),  # a surrogate's bytes
    ],
    ids=["valid", "invalid-byte", "cut-character", "surrogate"],
)
def test_bytes_that_are_not_utf8_read_with_replacement_characters(raw: bytes, read: bytes):
    assert utf8_repaired(raw) == read


def test_valid_utf8_is_given_back_as_the_same_object():
    raw = "naïve".encode()
    assert utf8_repaired(raw) is raw
