"""servekit.sse: the upstream event-stream decoder, under every way a body can be cut."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servekit.sse import LineTooLong, SseDecoder, SseEvent, data_events


def decode(body: bytes, cuts: list[int] | None = None, limit: int = 1 << 20) -> list[SseEvent]:
    """Events from `body` fed in pieces cut at `cuts` (byte offsets), then finished."""
    decoder = SseDecoder(limit)
    events: list[SseEvent] = []
    start = 0
    for cut in sorted(set(cuts or [])):
        events += decoder.feed(body[start:cut])
        start = cut
    events += decoder.feed(body[start:])
    return events + decoder.finish()


def test_data_lines_become_one_event_per_blank_line() -> None:
    body = b'data: {"a": 1}\n\ndata: [DONE]\n\n'
    assert decode(body) == [SseEvent(None, '{"a": 1}'), SseEvent(None, "[DONE]")]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_every_line_ending_is_a_line_ending(newline: bytes) -> None:
    body = newline.join([b"event: delta", b"data: one", b"data: two", b"", b""])
    assert decode(body) == [SseEvent("delta", "one\ntwo")]


def test_comments_and_id_and_retry_fields_are_not_data() -> None:
    body = b": keep-alive\n\nid: 7\nretry: 100\ndata:x\n\n: ping\n\n"
    assert decode(body) == [SseEvent(None, "x")]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert decode(b"data:  two spaces\n\n") == [SseEvent(None, " two spaces")]


def test_an_event_the_body_ended_inside_is_still_delivered() -> None:
    assert decode(b"data: last") == [SseEvent(None, "last")]


def test_unknown_fields_are_ignored() -> None:
    assert decode(b"weird: 1\n\ndata: y\n\n") == [SseEvent(None, "y")]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert decode(b"data: \xff\xfe\n\n") == [SseEvent(None, "\ufffd\ufffd")]


def test_a_line_longer_than_the_limit_raises_instead_of_growing() -> None:
    decoder = SseDecoder(max_line_bytes=64)
    for _ in range(4):  # a runaway line in pieces, never ending: 64 bytes are still held
        decoder.feed(b"x" * 16)
    with pytest.raises(LineTooLong):
        decoder.feed(b"x")


def test_a_complete_line_longer_than_the_limit_raises() -> None:
    with pytest.raises(LineTooLong):
        SseDecoder(max_line_bytes=64).feed(b"data: " + b"x" * 100 + b"\n\n")


def test_a_one_megabyte_line_under_the_default_limit_is_read_whole() -> None:
    text = "y" * (1 << 20)
    body = f"data: {text}\n\n".encode()
    assert decode(body, list(range(0, len(body), 4096)), limit=8 << 20) == [SseEvent(None, text)]


LINE_TEXT = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=12
)
BODIES = st.lists(
    st.tuples(
        st.sampled_from([None, "delta", "error"]),
        st.lists(LINE_TEXT, min_size=1, max_size=3),
    ),
    max_size=6,
)


@given(
    events=BODIES,
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_where_the_body_is_cut_never_changes_the_events(
    events: list[tuple[str | None, list[str]]], newline: str, cuts: list[int]
) -> None:
    lines: list[str] = []
    for name, data in events:
        if name is not None:
            lines.append(f"event: {name}")
        lines += [f"data: {d}" for d in data]
        lines.append("")
    body = (newline.join(lines) + newline).encode() if lines else b""
    whole = decode(body)

    assert decode(body, [c for c in cuts if c <= len(body)]) == whole
    assert whole == [SseEvent(name, "\n".join(data)) for name, data in events]


def test_an_event_of_many_short_data_lines_past_the_limit_raises_instead_of_growing() -> None:
    decoder = SseDecoder(max_line_bytes=64)
    for _ in range(4):  # each line short (15 bytes counted), the event never ended
        decoder.feed(b"data: 123456789\n")
    with pytest.raises(LineTooLong, match="event-stream event is longer than 64 bytes"):
        decoder.feed(b"data: 123456789\n")


def test_many_short_events_never_add_up_to_the_limit() -> None:
    decoder = SseDecoder(max_line_bytes=64)
    for _ in range(100):
        assert decoder.feed(b"data: 123456789\n\n") == [SseEvent(None, "123456789")]


@pytest.mark.parametrize("cut", range(6, 10))
def test_a_character_cut_between_two_pieces_arrives_whole(cut: int) -> None:
    body = "data: né€😀\n\n".encode()
    assert decode(body, [cut]) == [SseEvent(None, "né€😀")]


# --- data_events: a piece that is nothing but whole data lines -----------------------------


@pytest.mark.parametrize(
    "piece",
    [
        b'data: {"a":1}\n\n',
        b'data: {"a":1}\n\ndata: {"b":"\xc3\xa9t\xc3\xa9"}\n\n',
        b"data: not json, still one line\n\n",
    ],
    ids=["one", "two, one of them UTF-8", "not json"],
)
def test_a_piece_of_whole_data_lines_decodes_back_to_itself(piece: bytes) -> None:
    count = data_events(piece, 1 << 20)
    events = decode(piece)
    assert count == len(events)
    assert b"".join(b"data: " + e.data.encode() + b"\n\n" for e in events) == piece


@pytest.mark.parametrize(
    "piece",
    [
        b"",
        b'data: {"a":1}\n',  # the event's blank line not yet here
        b'data: {"a":1}\n\ndata: {"b"',  # a part of the next event
        b'data:{"a":1}\n\n',  # no space: decodes to the same data, written back otherwise
        b'data: {"a":1}\r\n\r\n',
        b'event: x\ndata: {"a":1}\n\n',
        b'id: 7\ndata: {"a":1}\n\n',
        b'data: {"a":1}\ndata: {"b":2}\n\n',  # two data lines of one event
        b': keep-alive\n\ndata: {"a":1}\n\n',
        b'data: {"a":1}\n\n\ndata: {"b":2}\n\n',  # a stray line end
        b'data: {"a":1}\n\ndata: [DONE]\n\n',
        b'data: {"a":"\xff"}\n\n',  # not UTF-8: the decoder would replace it
        b'data: {"a":"' + b"x" * 64 + b'"}\n\n',  # past the bound below
    ],
    ids=[
        "empty",
        "unfinished event",
        "a part of the next",
        "no space",
        "crlf",
        "event field",
        "id field",
        "two data lines",
        "comment",
        "stray line end",
        "done",
        "not utf-8",
        "past the bound",
    ],
)
def test_a_piece_that_is_anything_more_is_not_counted(piece: bytes) -> None:
    assert data_events(piece, 64) == 0
