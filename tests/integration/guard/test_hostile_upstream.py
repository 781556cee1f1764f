"""The guard proxy under a hostile model server (issue 27): a whole answer too large to hold
is a 502 that says so, nothing of it kept, and the proxy goes on serving.

The upstream is scripted as raw bytes; the proxy's bound is set to 1 MiB here (64 MiB by
default, `MAX_ANSWER_BYTES`) so each case stays small.
"""

from __future__ import annotations

import httpx
import orjson

from ...support.deadlines import DEADLINE_S
from ...support.servers import chunked_answer, scripted_upstream, serve_guard, whole_answer

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
