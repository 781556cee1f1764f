"""The guard proxy under a hostile model server (issue 27), on every guarded route where
the case applies: a whole answer too large to hold is a 502 that says so; a stream with a
line past the bound, more than MAX_TEXTS choices, or compressed though identity was asked
for ends with the route's error naming it; an opener with no end over megabytes is
stripped to the end (the one recovery follows); invalid UTF-8 arrives as U+FFFD and a
character split across reads arrives whole. A clean stream alongside each completes.

The upstream is scripted as raw bytes; the proxy's bounds are set to 1 MiB here (64 MiB
and 8 MiB by default: `max_answer_bytes`, `max_line_bytes`) so each case stays small.
What the proxy's memory does under the full-size cases is benchmarks/hostile_upstream.py.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import orjson
import pytest

from guard.wire.reply import MAX_TEXTS
from guardrail.policy import CORRECTION_INSTRUCTION

from ...support.deadlines import DEADLINE_S
from ...support.guarded_wires import CHAT, MESSAGES, RESPONSES, WIRES, Wire, refusal_of
from ...support.servers import (
    chunked_answer,
    chunked_stream,
    scripted_upstream,
    serve_guard,
    whole_answer,
    writing_upstream,
)

BOUND = 1024 * 1024
ASK = {"model": "m", "messages": [{"role": "user", "content": "When do backups run?"}]}
TOO_LARGE = f"The model server's answer is larger than {BOUND} bytes, more than the proxy reads."


def completion(content: str) -> bytes:
    return orjson.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    )


HUGE = completion("x" * (2 * BOUND))


def ask(url: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json=ASK, timeout=DEADLINE_S)


def refused_as_too_large(response: httpx.Response) -> bool:
    return response.status_code == 502 and response.json()["error"]["message"] == TOO_LARGE


def test_a_whole_answer_declared_over_the_bound_is_a_502_that_says_so():
    with (
        scripted_upstream([whole_answer(HUGE)]) as upstream,
        serve_guard(upstream, max_answer_bytes=BOUND) as url,
    ):
        assert refused_as_too_large(ask(url))


def test_a_whole_answer_growing_past_the_bound_undeclared_is_a_502_that_says_so():
    answer = chunked_answer(HUGE, content_type="application/json")
    with (
        scripted_upstream([answer]) as upstream,
        serve_guard(upstream, max_answer_bytes=BOUND) as url,
    ):
        assert refused_as_too_large(ask(url))


def test_an_error_status_with_a_body_over_the_bound_is_a_502_that_says_so():
    head = f"HTTP/1.1 500 Internal Server Error\r\ncontent-length: {len(HUGE)}\r\n"
    answer = head.encode() + b"connection: close\r\n\r\n" + HUGE
    with (
        scripted_upstream([answer]) as upstream,
        serve_guard(upstream, max_answer_bytes=BOUND) as url,
    ):
        assert refused_as_too_large(ask(url))


def test_the_proxy_serves_the_next_answer_after_one_too_large():
    fine = whole_answer(completion("Backups run nightly at 02:00."))
    with (
        scripted_upstream([whole_answer(HUGE), fine]) as upstream,
        serve_guard(upstream, max_answer_bytes=BOUND) as url,
    ):
        assert refused_as_too_large(ask(url))
        answer = ask(url)
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "Backups run nightly at 02:00."


def test_an_answer_just_within_the_bound_is_passed_on():
    content = "y" * (BOUND - len(completion("")) - 16)
    with (
        scripted_upstream([whole_answer(completion(content))]) as upstream,
        serve_guard(upstream, max_answer_bytes=BOUND) as url,
    ):
        answer = ask(url)
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == content


# --- streams ---------------------------------------------------------------------------------

ROUTES = pytest.mark.parametrize("wire", WIRES, ids=[w.name for w in WIRES])
START = "<|tool_call_start|>"
INSIDE = "[read(path='/homelab/backup-notes.md')] " * 100  # 4 KB, no end marker in it
RECOVERED = "Backups run nightly at 02:00."
CLEAN = "Snapshots are kept for a week."
TOO_MANY = f"The model server sent more than the proxy reads: a reply with more than {MAX_TEXTS}"
GUARDED = {"max_answer_bytes": BOUND, "max_line_bytes": BOUND}
Hostile = Callable[[Wire, threading.Event], Iterator[bytes]]
"""A hostile answer's body pieces on a route; it waits on the event half-way."""


def answers(
    wire: Wire, hostile: Iterable[bytes], *headers: str
) -> Callable[[bytes], Iterator[bytes]]:
    """The upstream: `hostile` for the first request, a clean answer to a recovery request
    (it carries the correction) or to a question asking for `clean`."""

    def answer(body: bytes) -> Iterator[bytes]:
        if CORRECTION_INSTRUCTION in str(orjson.loads(body)):  # the recovery request
            return chunked_stream(
                [wire.opening, wire.text(RECOVERED, 0), wire.closing], wire.content_type
            )
        if b"clean" in body:
            return chunked_stream(
                [wire.opening, wire.text(CLEAN, 0), wire.closing], wire.content_type
            )
        return chunked_stream(hostile, wire.content_type, *headers)

    return answer


def streamed(url: str, wire: Wire, question: str = "When do backups run?") -> httpx.Response:
    """The client's whole streamed answer (read under the deadline)."""
    with httpx.Client(timeout=DEADLINE_S) as client:
        response = client.post(f"{url}{wire.path}", json=wire.asks(question))
        response.read()
    return response


def long_line(wire: Wire, halfway: threading.Event) -> Iterator[bytes]:
    """The stream's opening, then one line of 5 MiB (no newline) in 64 KiB writes."""
    yield wire.opening
    for n in range(80):
        if n == 8:
            halfway.wait(DEADLINE_S)
        yield b"x" * 65536


def unended_span(wire: Wire, halfway: threading.Event) -> Iterator[bytes]:
    """An opener, then 4 MB of the span's inside in 1,000 chunks, no end marker."""
    yield wire.opening + wire.text(START, 0)
    for n in range(1000):
        if n == 100:
            halfway.wait(DEADLINE_S)
        yield wire.text(INSIDE, 0)
    yield wire.closing


def many_choices(wire: Wire, halfway: threading.Event) -> Iterator[bytes]:
    """Text on 10,000 choice (part, block) indexes."""
    yield wire.opening
    for index in range(10_000):
        if index == MAX_TEXTS // 2:
            halfway.wait(DEADLINE_S)
        yield wire.text("a", index)
    yield wire.closing


def invalid_utf8(wire: Wire, halfway: threading.Event) -> Iterator[bytes]:
    """Text with an invalid byte, then text with a character cut across two writes."""
    yield wire.opening + wire.text("@", 0).replace(b"@", b"caf\xff ")
    halfway.wait(DEADLINE_S)
    split = wire.text("n\u00e9 \U0001f600", 0)
    cut = split.index("\U0001f600".encode()) + 2
    yield split[:cut]
    yield split[cut:] + wire.closing


def gzip_bomb(wire: Wire, halfway: threading.Event) -> Iterator[bytes]:
    """16 MiB of zeros gzipped (16 KB), though the proxy asked for identity."""
    halfway.wait(DEADLINE_S)
    yield gzip.compress(bytes(16 * 1024 * 1024))


GZIP = "content-encoding: gzip"
REFUSED_GZIP = (
    "The model server answered with Content-Encoding gzip, though the proxy asked for"
    " identity; the proxy does not decompress answers."
)


def played(wire: Wire, hostile: Hostile, *headers: str) -> httpx.Response:
    """The client's answer from a proxy in front of an upstream playing `hostile` at once."""
    halfway = threading.Event()
    halfway.set()
    with (
        writing_upstream(answers(wire, hostile(wire, halfway), *headers)) as upstream,
        serve_guard(upstream, **GUARDED) as url,
    ):
        return streamed(url, wire)


@ROUTES
def test_a_line_past_the_bound_ends_the_stream_with_the_routes_error_naming_it(wire: Wire):
    answer = played(wire, long_line)
    assert answer.status_code == 200
    assert f"line is longer than {BOUND} bytes" in (wire.error_of(answer.content) or "")


@ROUTES
def test_an_opener_with_no_end_over_megabytes_is_stripped_and_recovered(wire: Wire):
    answer = played(wire, unended_span)
    assert wire.error_of(answer.content) is None
    assert wire.text_of(answer.content) == RECOVERED


@pytest.mark.parametrize("wire", [CHAT, RESPONSES, MESSAGES], ids=["chat", "responses", "messages"])
def test_more_choices_than_max_texts_end_the_stream_with_the_routes_error_naming_it(wire: Wire):
    answer = played(wire, many_choices)
    assert (wire.error_of(answer.content) or "").startswith(TOO_MANY)


@ROUTES
def test_invalid_utf8_arrives_as_replacement_and_a_split_character_arrives_whole(wire: Wire):
    answer = played(wire, invalid_utf8)
    assert wire.error_of(answer.content) is None
    assert wire.text_of(answer.content) == "caf\ufffd n\u00e9 \U0001f600"


@ROUTES
def test_a_guarded_answer_compressed_though_identity_was_asked_is_a_502(wire: Wire):
    answer = played(wire, gzip_bomb, GZIP)
    assert answer.status_code == 502
    assert refusal_of(answer.content) == REFUSED_GZIP


def test_a_whole_answer_compressed_though_identity_was_asked_is_a_502():
    bomb = gzip.compress(bytes(16 * 1024 * 1024))
    head = f"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: {len(bomb)}\r\n"
    with (
        scripted_upstream([head.encode() + b"connection: close\r\n\r\n" + bomb]) as upstream,
        serve_guard(upstream) as url,
    ):
        answer = ask(url)
    assert answer.status_code == 502
    assert refusal_of(answer.content) == REFUSED_GZIP


def test_a_passed_on_answer_keeps_its_content_coding_and_bytes():
    bomb = gzip.compress(bytes(1024 * 1024))
    head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
    asked: list[bytes] = []

    def answer(request: bytes) -> list[bytes]:
        asked.append(request)
        return [f"{head}content-length: {len(bomb)}\r\nconnection: close\r\n\r\n".encode() + bomb]

    with (
        writing_upstream(answer) as upstream,
        serve_guard(upstream) as url,
        httpx.Client(timeout=DEADLINE_S) as client,
        client.stream("GET", f"{url}/v1/models", headers={"accept-encoding": "gzip"}) as got,
    ):
        raw = b"".join(got.iter_raw())
    assert got.headers["content-encoding"] == "gzip"
    assert raw == bomb


HOSTILE = {
    "long-line": long_line,
    "unended-span": unended_span,
    "many-choices": many_choices,
    "invalid-utf8": invalid_utf8,
    "gzip-bomb": gzip_bomb,
}


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_clean_stream_completes_while_a_hostile_one_is_served(hostile: Hostile):
    halfway, started = threading.Event(), threading.Event()

    def begun(wire: Wire, gate: threading.Event) -> Iterator[bytes]:
        started.set()
        yield from hostile(wire, gate)

    headers = (GZIP,) if hostile is gzip_bomb else ()
    with (
        writing_upstream(answers(CHAT, begun(CHAT, halfway), *headers)) as upstream,
        serve_guard(upstream, **GUARDED) as url,
        ThreadPoolExecutor(1) as pool,
    ):
        hostile_answer = pool.submit(streamed, url, CHAT)
        try:
            assert started.wait(DEADLINE_S)
            clean = streamed(url, CHAT, "a clean question")
        finally:
            halfway.set()
        assert clean.status_code == 200
        assert CHAT.text_of(clean.content) == CLEAN
        assert CHAT.error_of(clean.content) is None
        assert hostile_answer.result(DEADLINE_S).status_code in (200, 502)
