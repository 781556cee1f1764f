"""scaffold_guard.integrations.litellm_guardrail: the hooks LiteLLM's proxy calls, driven
in-process.

The hooks get real `litellm` chunks and completions; the one recovery is caught at its
seam (`litellm.acompletion`, or the running proxy's router), so each test states what was
asked and what came back. tests/integration/integrations/test_litellm_sdk.py makes the same
recovery for real against the mock; tests/thirdparty/test_litellm_proxy.py runs LiteLLM's own
proxy.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Iterable
from types import SimpleNamespace
from typing import Any

import litellm
import pytest
from litellm import ModelResponse, ModelResponseStream
from litellm.exceptions import ServiceUnavailableError
from litellm.proxy._types import UserAPIKeyAuth
from litellm.types.guardrails import GuardrailEventHooks  # pyright: ignore[reportMissingTypeStubs]

from guardrail.policy import CORRECTION_INSTRUCTION, MALFORMED_REPLY, strip_warning
from scaffold_guard.integrations.litellm_guardrail import (
    LOG,
    PROXY_SERVER,
    MalformedReplyError,
    ScaffoldGuardrail,
    model_names,
)

from ...support.deadlines import DEADLINE_S
from ...support.litellm_chunks import (
    CREATED,
    ID,
    MODEL,
    THIRD_PARTY_WARNINGS,
    completion,
    finishes,
    roles,
    shown,
    stream,
)

pytestmark = THIRD_PARTY_WARNINGS

SPAN = "<|tool_call_start|>[read(path='/homelab/x.md')]<|tool_call_end|>"
CLEAN = ["Backups run ", "nightly at ", "02:00."]
TOOL_CALL: Any = {"index": 0, "id": "c", "type": "function", "function": {"name": "read"}}
KEY = UserAPIKeyAuth()
MESSAGES = [{"role": "system", "content": "Notes."}, {"role": "user", "content": "When?"}]
REQUEST: dict[str, Any] = {
    "model": "lfm2",
    "messages": MESSAGES,
    "stream": True,
    "tools": [{"type": "function", "function": {"name": "read"}}],
    "api_base": "http://127.0.0.1:9/v1",
    "api_key": "x",
    "litellm_call_id": "abc",
}
RECOVERED = [
    {"role": "system", "content": f"Notes.\n\n{CORRECTION_INSTRUCTION}"},
    {"role": "user", "content": "When?"},
]
OTHER = ("chatcmpl-recovery", 1_800_000_000, "lfm2-other")
HERMES = "a<tool_call>{}</tool_call>b"
"""Qwen's (Hermes') tool-call markup: a look-alike, stripped only for a model that writes it."""


def guardrail(**kwargs: Any) -> ScaffoldGuardrail:
    return ScaffoldGuardrail(guardrail_name="sg", event_hook="post_call", default_on=True, **kwargs)


class Seam:
    """Stands in for `acompletion`: records each call's kwargs, answers with `answers` in
    turn (a list of chunks is a stream; anything else is returned as it is)."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []
        self.closed = False

    def arm(self, *answers: object) -> None:
        self.answers = list(answers)

    async def acompletion(self, **kwargs: Any) -> object:
        self.calls.append(kwargs)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return self._stream(answer) if isinstance(answer, list) else answer

    async def _stream(
        self, chunks: list[ModelResponseStream]
    ) -> AsyncIterator[ModelResponseStream]:
        try:
            for c in chunks:
                yield c
        finally:
            self.closed = True


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> Seam:
    """`litellm.acompletion` refusing to be called: a test that expects a recovery arms it."""
    found = Seam()
    monkeypatch.setattr(litellm, "acompletion", found.acompletion)
    monkeypatch.delitem(sys.modules, PROXY_SERVER, raising=False)
    return found


async def aiter_of(items: Iterable[object]) -> AsyncIterator[object]:
    for item in items:
        yield item


async def relayed(
    guard: ScaffoldGuardrail, chunks: Iterable[object], request: dict[str, Any] = REQUEST
) -> list[Any]:
    hook = guard.async_post_call_streaming_iterator_hook(KEY, aiter_of(chunks), request)
    async with asyncio.timeout(DEADLINE_S):
        return [c async for c in hook]


async def into(out: list[Any], hook: AsyncIterator[Any]) -> None:
    """Collect what `hook` yields into `out`, until it ends or raises."""
    async with asyncio.timeout(DEADLINE_S):
        async for c in hook:
            out.append(c)


def warnings_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOG.name]


# --- how LiteLLM's proxy runs it -------------------------------------------------------------


def test_the_class_keeps_off_litellms_unified_guardrail_path():
    # With its own apply_guardrail the proxy would sample every 5th chunk and drop rewrites;
    # without it, the proxy hands the class's own hook (found in its __dict__) every chunk.
    assert "apply_guardrail" not in vars(ScaffoldGuardrail)
    assert not ScaffoldGuardrail.uses_apply_guardrail_interface()
    assert "async_post_call_streaming_iterator_hook" in vars(ScaffoldGuardrail)
    assert "async_post_call_success_hook" in vars(ScaffoldGuardrail)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_default_on_it_runs_after_every_call(stream: bool):
    data = {"messages": MESSAGES, "stream": stream}
    assert guardrail().should_run_guardrail(data, GuardrailEventHooks.post_call)
    assert not guardrail().should_run_guardrail(data, GuardrailEventHooks.pre_call)


def test_a_mode_other_than_post_call_is_refused_at_start():
    with pytest.raises(ValueError, match="not in the supported event hooks"):
        ScaffoldGuardrail(guardrail_name="sg", event_hook="pre_call", default_on=True)


@pytest.mark.parametrize("profiles", ["hermes", " hermes , ", ["hermes"], "all"])
async def test_profiles_add_other_families_markup_whatever_the_model(profiles: object, seam: Seam):
    out = await relayed(guardrail(profiles=profiles), stream([HERMES]))
    assert shown(out) == "ab"


async def test_by_default_a_look_alike_is_text_for_an_lfm2_model(seam: Seam):
    out = await relayed(guardrail(), stream([HERMES]))
    assert shown(out) == HERMES


async def test_by_default_a_qwen_answers_look_alike_is_stripped(seam: Seam):
    out = await relayed(guardrail(), stream([HERMES], identity=(ID, CREATED, "qwen3:8b")))
    assert shown(out) == "ab"


async def test_by_default_the_deployment_the_router_picked_names_the_family(seam: Seam):
    request = {**REQUEST, "model": "chat", "metadata": {"deployment": "openai/qwen3:8b"}}
    out = await relayed(guardrail(), stream([HERMES], identity=(ID, CREATED, "chat")), request)
    assert shown(out) == "ab"


async def test_a_profiles_setting_of_none_keeps_a_qwen_answers_look_alike(seam: Seam):
    out = await relayed(
        guardrail(profiles="none"), stream([HERMES], identity=(ID, CREATED, "qwen3:8b"))
    )
    assert shown(out) == HERMES


async def test_by_default_a_whole_qwen_answers_look_alike_is_stripped(seam: Seam):
    guard = guardrail()
    response = completion(HERMES, identity=(ID, CREATED, "qwen3:8b"))
    out = await guard.async_post_call_success_hook(dict(REQUEST, stream=False), KEY, response)
    assert out.choices[0].message.content == "ab"


def test_the_names_are_the_alias_the_routers_picks_and_the_answers():
    request = {"model": "chat", "metadata": {"model_group": "chat", "deployment": "openai/q"}}
    answer = completion("x", identity=(ID, CREATED, "q"))
    assert model_names(request, answer) == ("chat", "chat", "openai/q", "q")


@pytest.mark.parametrize("profiles", ["nope", ["hermes", "auto"]])
def test_an_unknown_profile_is_refused_at_start(profiles: object):
    with pytest.raises(ValueError, match=r"unknown profile.*known: auto, none, all, "):
        guardrail(profiles=profiles)


# --- streamed -------------------------------------------------------------------------------


async def test_a_clean_stream_goes_out_as_the_same_chunks(
    seam: Seam, caplog: pytest.LogCaptureFixture
):
    chunks = stream(CLEAN, usage=True)
    out = await relayed(guardrail(), chunks)
    assert all(a is b for a, b in zip(out, chunks, strict=True))
    assert seam.calls == []
    assert warnings_logged(caplog) == []


async def test_markup_is_filtered_with_no_recovery(seam: Seam, caplog: pytest.LogCaptureFixture):
    out = await relayed(guardrail(), stream(["See ", SPAN[:30], SPAN[30:], " notes. <|tool_"]))
    assert shown(out) == "See  notes. <|tool_"
    assert finishes(out) == ["stop"]
    assert seam.calls == []
    assert warnings_logged(caplog) == [strip_warning(len(SPAN), 1, SPAN)]


async def test_a_stream_that_stops_without_a_finish_gets_its_held_tail(seam: Seam):
    out = await relayed(guardrail(), stream(["reads <|tool_call_st"], finish=False))
    assert shown(out) == "reads <|tool_call_st"
    assert (out[-1].id, out[-1].created, out[-1].model) == (ID, CREATED, MODEL)


async def test_what_is_not_a_chat_chunk_passes_untouched(seam: Seam):
    raw = [b"event: message_start\n\n", {"type": "ping"}]
    assert await relayed(guardrail(), raw) == raw


async def test_a_reply_of_nothing_but_markup_is_recovered_in_the_same_stream(
    seam: Seam, caplog: pytest.LogCaptureFixture
):
    seam.arm(stream(["Nightly", "."], usage=True, identity=OTHER))
    out = await relayed(guardrail(), stream([SPAN], usage=True))
    assert shown(out) == "Nightly."
    assert seam.calls == [
        {
            "model": "lfm2",
            "messages": RECOVERED,
            "stream": True,
            "api_base": "http://127.0.0.1:9/v1",
            "api_key": "x",
        }
    ]
    assert {(c.id, c.created, c.model) for c in out} == {(ID, CREATED, MODEL)}
    assert roles(out) == ["assistant"]
    assert finishes(out) == ["stop"]
    assert sum(getattr(c, "usage", None) is not None for c in out) == 1
    assert seam.closed
    assert warnings_logged(caplog) == [strip_warning(len(SPAN), 1, SPAN)]


async def test_a_recovery_is_filtered_with_the_first_replys_registry(seam: Seam):
    """The recovery's chunks name another model: the turn keeps the registry it began with."""
    seam.arm(stream([HERMES], identity=OTHER))
    out = await relayed(guardrail(), stream([SPAN], identity=(ID, CREATED, "qwen3:8b")))
    assert shown(out) == "ab"


async def test_a_recovery_that_is_empty_too_ends_the_stream_with_the_malformed_reply_error(
    seam: Seam, caplog: pytest.LogCaptureFixture
):
    seam.arm(stream([SPAN, " "], usage=True))
    hook = guardrail().async_post_call_streaming_iterator_hook(
        KEY, aiter_of(stream([SPAN])), REQUEST
    )
    out: list[Any] = []
    with pytest.raises(MalformedReplyError, match=MALFORMED_REPLY):
        await into(out, hook)
    assert shown(out).strip() == ""
    assert finishes(out) == []
    assert seam.closed
    assert len(seam.calls) == 1
    assert warnings_logged(caplog) == [
        strip_warning(len(SPAN), 1, SPAN),
        strip_warning(len(SPAN), 2, SPAN),
    ]


async def test_a_recovery_the_model_server_refuses_is_the_clients_error(seam: Seam):
    seam.arm(ServiceUnavailableError("down", llm_provider="openai", model="lfm2"))
    with pytest.raises(ServiceUnavailableError):
        await relayed(guardrail(), stream([SPAN]))


async def test_the_recovery_goes_through_the_running_proxys_router(
    seam: Seam, monkeypatch: pytest.MonkeyPatch
):
    router = Seam(stream(["Routed."]))
    monkeypatch.setitem(sys.modules, PROXY_SERVER, SimpleNamespace(llm_router=router))
    out = await relayed(guardrail(), stream([SPAN]))
    assert shown(out) == "Routed."
    assert seam.calls == []
    assert router.calls == [{"model": "lfm2", "messages": RECOVERED, "stream": True}]


async def test_a_proxy_with_no_router_yet_leaves_the_recovery_to_litellm(
    seam: Seam, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setitem(sys.modules, PROXY_SERVER, SimpleNamespace(llm_router=None))
    seam.arm(stream(["Direct."]))
    assert shown(await relayed(guardrail(), stream([SPAN]))) == "Direct."
    assert len(seam.calls) == 1


async def test_a_reply_of_several_choices_gets_no_recovery(seam: Seam):
    out = await relayed(guardrail(), stream([SPAN]), {**REQUEST, "n": 2})
    assert shown(out) == ""
    assert seam.calls == []


async def test_a_reply_with_a_tool_call_gets_no_recovery(seam: Seam):
    chunks = stream([SPAN])
    chunks[1].choices[0].delta.tool_calls = [TOOL_CALL]
    out = await relayed(guardrail(), chunks)
    assert shown(out) == ""
    assert out[1].choices[0].delta.tool_calls == [TOOL_CALL]
    assert seam.calls == []


async def test_a_recovery_that_stops_without_a_finish_gets_its_held_tail(seam: Seam):
    seam.arm(stream(["reads <|tool_"], finish=False))
    out = await relayed(guardrail(), stream([SPAN]))
    assert shown(out) == "reads <|tool_"
    assert (out[-1].id, out[-1].created, out[-1].model) == (ID, CREATED, MODEL)


class Unclosable:
    """A stream with nothing to close (no `aclose`), as a router could hand back."""

    def __init__(self, chunks: list[ModelResponseStream]) -> None:
        self.chunks = chunks

    def __aiter__(self) -> AsyncIterator[ModelResponseStream]:
        async def each() -> AsyncIterator[ModelResponseStream]:
            for c in self.chunks:
                yield c

        return each()


async def test_a_recovery_stream_with_nothing_to_close_is_read_whole(seam: Seam):
    seam.arm(Unclosable(stream(["Fine."])))
    assert shown(await relayed(guardrail(), stream([SPAN]))) == "Fine."


async def test_a_client_that_leaves_during_the_recovery_closes_it(seam: Seam):
    seam.arm(stream(["one ", "two ", "three"]))
    hook = guardrail().async_post_call_streaming_iterator_hook(
        KEY, aiter_of(stream([SPAN])), REQUEST
    )
    async with asyncio.timeout(DEADLINE_S):
        async for c in hook:
            if shown([c]) == "one ":
                break
        await hook.aclose()
    assert seam.closed


# --- whole ------------------------------------------------------------------------------------


async def whole(
    guard: ScaffoldGuardrail, response: object, request: dict[str, Any] = REQUEST
) -> Any:
    async with asyncio.timeout(DEADLINE_S):
        return await guard.async_post_call_success_hook(request, KEY, response)  # type: ignore[arg-type]


async def test_a_clean_completion_is_returned_untouched(seam: Seam):
    response = completion("Backups run nightly.")
    before = response.model_dump_json()
    assert await whole(guardrail(), response) is response
    assert response.model_dump_json() == before


async def test_a_completion_with_markup_is_filtered_in_place(
    seam: Seam, caplog: pytest.LogCaptureFixture
):
    response = completion(f"See {SPAN}the notes.")
    assert await whole(guardrail(), response) is response
    assert response.choices[0].message.content == "See the notes."
    assert seam.calls == []
    assert warnings_logged(caplog) == [strip_warning(len(SPAN), 1, SPAN)]


async def test_a_completion_of_nothing_but_markup_is_recovered(seam: Seam):
    seam.arm(completion("Nightly.", identity=OTHER))
    out = await whole(guardrail(), completion(SPAN))
    assert isinstance(out, ModelResponse)
    assert out.choices[0].message.content == "Nightly."
    assert (out.id, out.created, out.model) == (ID, CREATED, MODEL)
    request = {k: v for k, v in REQUEST.items() if k != "stream"}
    assert seam.calls == [
        {"model": "lfm2", "messages": RECOVERED, "api_base": request["api_base"], "api_key": "x"}
    ]


@pytest.mark.parametrize("recovery", [SPAN, "  "], ids=["markup", "blank"])
async def test_a_completion_whose_recovery_is_empty_too_is_the_malformed_reply_error(
    seam: Seam, recovery: str
):
    seam.arm(completion(recovery))
    with pytest.raises(MalformedReplyError, match=MALFORMED_REPLY):
        await whole(guardrail(), completion(SPAN))


async def test_a_recovery_that_is_not_a_completion_is_the_malformed_reply_error(seam: Seam):
    seam.arm("not a completion")
    with pytest.raises(MalformedReplyError):
        await whole(guardrail(), completion(SPAN))


async def test_a_response_that_is_not_a_completion_is_returned_as_it_is(seam: Seam):
    embedding = litellm.EmbeddingResponse()
    assert await whole(guardrail(), embedding) is embedding


def test_the_malformed_reply_error_carries_what_the_proxy_puts_in_its_error_body():
    error = MalformedReplyError()
    assert (str(error), error.message) == (MALFORMED_REPLY, MALFORMED_REPLY)
    assert (error.status_code, error.type, error.param) == (502, "guard_error", None)


def test_the_strip_warning_goes_to_litellms_proxy_log():
    assert LOG.name == "LiteLLM Proxy.scaffold_guard"
    assert LOG.parent is logging.getLogger("LiteLLM Proxy")
