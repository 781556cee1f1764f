"""guard.relay: the flow every guarded request follows, driven here by hand (pure).

Each built-in flow's chat completion goes through `streamed` and `whole` as the mock sends
it, the recovery's step where one is due; then the flow's own decisions one by one: what a
cut, a broken bound, a refused recovery and a body that is not JSON give the client, for
the chat completions API and Ollama's (whose cut after a done line still recovers).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

import pytest

from guard.relay import (
    Answer,
    Emit,
    Fault,
    Opened,
    Post,
    Read,
    Refused,
    Reply,
    Settle,
    Tally,
    Whole,
    streamed,
    whole,
)
from guard.wire.apis import CHAT_COMPLETIONS, OLLAMA_CHAT, api_for
from guard.wire.faults import CUT_OFF
from guardrail.model_profiles import registry_for
from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY
from guardrail.registries import DEFAULT_REGISTRY
from servekit.sse import DEFAULT_MAX_LINE_BYTES

from ...support.families import hidden_canary
from .test_guard_responses import ANSWERED, FLOWS
from .test_guard_responses import META as MOCK_META
from .test_guard_stream import chunk, content, mock_completion, mock_stream

CALL = "<|tool_call_start|>[read(path='/homelab/x.md')]<|tool_call_end|>"
BODY: dict[str, Any] = {
    "model": "m",
    "stream": True,
    "messages": [{"role": "user", "content": "q"}],
}


SETTLED = b"<settled>"
"""Where the flow said Settle, in what the client got (`drive` marks it)."""


def sse(payloads: list[str], done: bool = True) -> bytes:
    events = [f"data: {p}\n\n".encode() for p in payloads]
    return b"".join([*events, b"data: [DONE]\n\n" if done else b""])


def said(text: str, *, finish: bool = True) -> list[str]:
    """A chat completion stream of `text`."""
    return [chunk({"role": "assistant", "content": text}), *([chunk({}, "stop")] if finish else [])]


def drive(
    flow: Generator[Any, Reply, Any],
    upstream: list[bytes | Fault],
    later: list[Reply | list[bytes | Fault]],
) -> tuple[bytes, list[dict[str, Any]], Any]:
    """Run `flow` as a driver would: `upstream` the open stream's reads (b"" after them),
    `later` what each Post gets (a list: an opened stream's reads). What the client got
    (SETTLED where the flow settled), the bodies posted, and the flow's result."""
    reads, posts, out = list(upstream), list[dict[str, Any]](), b""
    reply: Reply = None
    while True:
        try:
            effect = flow.send(reply)
        except StopIteration as stop:
            assert out.count(SETTLED) <= 1
            return out, posts, stop.value
        reply = None
        if isinstance(effect, Emit):
            out += effect.data
        elif isinstance(effect, Read):
            reply = reads.pop(0) if reads else b""
        elif isinstance(effect, Settle):
            out += SETTLED
        else:
            assert isinstance(effect, Post)
            posts.append(effect.body)
            answer = later.pop(0)
            if isinstance(answer, list):
                reads, reply = list(answer), Opened()
            else:
                reply = answer


def last_event(out: bytes) -> dict[str, Any]:
    return json.loads(shown(out).rstrip(b"\n").split(b"\n\n")[-1].removeprefix(b"data: "))


def shown(out: bytes) -> bytes:
    """What the client got, without the mark of where the flow settled."""
    return out.replace(SETTLED, b"")


def texts(out: bytes) -> str:
    out = shown(out)
    events = [e for e in out.split(b"\n\n") if e.startswith(b"data: ")]
    return content([e + b"\n\n" for e in events])


# --- every built-in flow ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ANSWERED)
def test_each_built_in_flow_through_the_relay_shows_what_its_expect_block_says(name: str):
    flow = FLOWS[name]
    step = flow.steps[0]
    registry = registry_for(MOCK_META.model)
    expect = flow.expect_for(MOCK_META.model)
    recovers = expect is not None and expect.recovery and not step.tool_calls
    later: list[Reply | list[bytes | Fault]] = [[sse(mock_stream(name, 1))]] if recovers else []
    tally = Tally()
    out, posts, _ = drive(
        streamed(CHAT_COMPLETIONS, registry, BODY, tally), [sse(mock_stream(name))], later
    )
    whole_later: list[Reply | list[bytes | Fault]] = (
        [Whole(200, json.dumps(mock_completion(name, 1)).encode())] if recovers else []
    )
    whole_tally = Tally()
    first = Whole(200, json.dumps(mock_completion(name)).encode())
    _, whole_posts, answer = drive(
        whole(CHAT_COMPLETIONS, registry, {**BODY, "stream": False}, first, whole_tally),
        [],
        whole_later,
    )
    assert isinstance(answer, Answer)
    assert (len(posts), len(whole_posts)) == (int(recovers), int(recovers))
    malformed = expect is not None and expect.error == "malformed" and not step.tool_calls
    shown_whole = json.loads(answer.body)
    if malformed:
        assert MALFORMED_REPLY.encode() in shown(out).rstrip(b"\n").split(b"\n\n")[-1]
        assert answer.status == 502
        assert shown_whole["error"]["code"] == "malformed_reply"
    else:
        assert out.endswith(b"data: [DONE]\n\n")
        assert SETTLED in out
        got = [texts(out), shown_whole["choices"][0]["message"]["content"] or ""]
        if expect is not None and not step.tool_calls:
            assert got == [expect.shown] * 2
            assert (tally.stripped, whole_tally.stripped) == (expect.stripped_chars,) * 2
        if canary := hidden_canary(flow, MOCK_META.model):
            assert not any(canary in text for text in got)


# --- the flow's decisions --------------------------------------------------------------------


def test_a_clean_stream_goes_out_as_the_upstreams_bytes_with_no_second_request():
    upstream = sse(said("Backups run nightly."))
    out, posts, _ = drive(
        streamed(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, Tally()), [upstream], []
    )
    assert (out, posts) == (SETTLED + upstream, [])


def test_a_markup_only_stream_gets_one_recovery_request_with_the_correction_and_no_tools():
    tally = Tally()
    body = {**BODY, "tools": [{"type": "function"}], "tool_choice": "auto"}
    out, posts, _ = drive(
        streamed(CHAT_COMPLETIONS, DEFAULT_REGISTRY, body, tally),
        [sse(said(CALL))],
        [[sse(said("It runs at 02:00."))]],
    )
    assert texts(out) == "It runs at 02:00."
    assert out.count(b"[DONE]") == 1
    assert SETTLED in out  # by the recovery's [DONE], not the first reply's end
    (recovery,) = posts
    assert "tools" not in recovery
    assert "tool_choice" not in recovery
    assert recovery["messages"][0] == {"role": "system", "content": CORRECTION_INSTRUCTION}
    assert (tally.recoveries, tally.stripped) == (1, len(CALL))


def test_a_recovery_the_upstream_refuses_ends_the_stream_with_its_message():
    out, _, _ = drive(
        streamed(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, Tally()),
        [sse(said(CALL))],
        [Refused(429, "Slow down.")],
    )
    assert last_event(out)["error"] == {
        "message": "Slow down.",
        "type": "guard_error",
        "param": None,
        "code": "upstream_429",
    }


def test_a_cut_stream_ends_with_the_error_event_and_gets_no_recovery():
    tally = Tally()
    out, posts, _ = drive(
        streamed(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, tally),
        [sse(said(CALL, finish=False), done=False), Fault(CUT_OFF)],
        [],
    )
    assert posts == []
    assert tally.failed
    assert last_event(out)["error"]["message"] == CUT_OFF


def test_a_line_past_the_bound_is_a_fault_that_names_it():
    long = sse(said("x" * (DEFAULT_MAX_LINE_BYTES + 1)))
    out, _, _ = drive(streamed(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, Tally()), [long], [])
    assert out.startswith(SETTLED)  # the line ends the stream: logged before it goes out
    assert b"more than the proxy reads" in out


def test_an_ollama_reply_cut_after_its_done_line_still_gets_its_recovery():
    done = json.dumps(
        {"model": "m", "message": {"role": "assistant", "content": CALL}, "done": True}
    )
    answer = json.dumps(
        {"model": "m", "message": {"role": "assistant", "content": "At 02:00."}, "done": True}
    )
    out, posts, _ = drive(
        streamed(OLLAMA_CHAT, DEFAULT_REGISTRY, BODY, Tally()),
        [done.encode() + b"\n", Fault(CUT_OFF)],
        [[answer.encode() + b"\n"]],
    )
    assert len(posts) == 1
    assert out.startswith(SETTLED)  # not the first reply's done line: the recovery's
    assert json.loads(shown(out))["message"]["content"] == "At 02:00."


def test_a_whole_recovery_the_upstream_refuses_is_passed_on_as_it_came():
    refusal = b'{"error": {"message": "Slow down."}}'
    first = Whole(
        200, json.dumps({"choices": [{"index": 0, "message": {"content": CALL}}]}).encode()
    )
    _, _, answer = drive(
        whole(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, first, Tally()),
        [],
        [Refused(429, "Slow down.", refusal)],
    )
    assert answer == Answer(429, refusal, changed=False)


def test_a_whole_answer_that_is_not_json_is_passed_on_as_it_came():
    _, posts, answer = drive(
        whole(CHAT_COMPLETIONS, DEFAULT_REGISTRY, BODY, Whole(200, b"<html>"), Tally()), [], []
    )
    assert (answer, posts) == (Answer(200, b"<html>", changed=False), [])


@pytest.mark.parametrize(
    ("method", "path", "api"),
    [
        ("POST", "/v1/chat/completions", "chat"),
        ("POST", "/chat/completions", "chat"),
        ("POST", "/v1/responses", "responses"),
        ("POST", "/v1/messages", "messages"),
        ("POST", "/api/chat", "ollama-chat"),
        ("POST", "/api/generate", "ollama-generate"),
        ("GET", "/v1/models", None),
        ("GET", "/v1/responses/resp_1", None),
        ("POST", "/v1/embeddings", None),
        ("POST", "/x/api/chat", None),
    ],
)
def test_a_request_belongs_to_the_api_its_method_and_path_name(
    method: str, path: str, api: str | None
):
    found = api_for(method, path)
    assert (found.name if found else None) == api


def test_an_ollama_stream_settles_at_its_done_line_before_the_body_ends():
    """The log line is written before the done line goes out (an Ollama client stops
    reading there), though the body is read on to its end."""
    done = json.dumps(
        {"model": "m", "message": {"role": "assistant", "content": "Hi."}, "done": True}
    )
    out, _, _ = drive(
        streamed(OLLAMA_CHAT, DEFAULT_REGISTRY, BODY, Tally()), [done.encode() + b"\n", b""], []
    )
    assert out == SETTLED + done.encode() + b"\n"
