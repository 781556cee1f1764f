"""The guardrail as a LiteLLM proxy custom guardrail: `ScaffoldGuardrail`.

It filters streamed and whole chat completions per choice (reasoning and tool calls
untouched), sends the one recovery (G2) for a reply that was only markup, and ends with
`MalformedReplyError` (G3) if that shows nothing either. Configuration: docs/integrations.md.

Deliberate choices:
- `apply_guardrail` is not overridden, on purpose: LiteLLM routes a guardrail that has it
  through its unified path, which samples every 5th stream chunk and drops text rewrites.
  Without it the proxy hands this class's own streaming hook every chunk (it looks in the
  class's own `__dict__`, so a subclass must define the hooks again). Pinned by
  tests/unit/integrations/test_litellm_guardrail.py and tests/thirdparty/test_litellm_proxy.py.
- The recovery uses the running proxy's own router (read from `sys.modules`, never
  imported: importing it builds a proxy app), so the model name resolves as the first
  request's did; it skips the proxy's pre-call hooks, budgets and spend logging, since it
  is the guardrail's request, not the client's. A refusal raises LiteLLM's own error.
- Under `profiles: auto` the registry follows every name the request goes by (the
  proxy's alias, the router's deployment from the request metadata, the answer's
  `model`), because the alias is often a name of no family; chosen at a stream's first
  chunk and kept for the whole turn, recovery included.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, cast

import litellm
from litellm import ModelResponse, ModelResponseStream
from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.proxy._types import UserAPIKeyAuth

# litellm.types is a namespace package (no __init__.py), so pyright sees no py.typed marker
# for it and asks for stubs; it reads the annotated source all the same.
from litellm.types.guardrails import GuardrailEventHooks  # pyright: ignore[reportMissingTypeStubs]
from litellm.types.utils import LLMResponseTypes  # pyright: ignore[reportMissingTypeStubs]

from guardrail.model_profiles import AUTO, ProfileChoice, parse_profiles
from guardrail.patterns import Registry
from guardrail.policy import MALFORMED_REPLY, strip_warning
from scaffold_guard.integrations.litellm_filter import (
    CompletionFilter,
    StreamFilter,
    recovery_request,
    single_choice,
)

__all__ = ["LOG", "MalformedReplyError", "ScaffoldGuardrail", "model_names"]

LOG = logging.getLogger("LiteLLM Proxy").getChild("scaffold_guard")
"""A child of LiteLLM's proxy logger: its handler and format, the proxy's log."""

PROXY_SERVER = "litellm.proxy.proxy_server"
_NOTHING = object()
"""What an empty stream's first item is."""
METADATA_KEYS = ("metadata", "litellm_metadata")
"""Where LiteLLM keeps a request's routing metadata (the router picks one by the route)."""


class MalformedReplyError(Exception):
    """The recovery came back empty too (G3). LiteLLM's proxy turns `message`, `type` and
    `status_code` into the client's error event or error response."""

    status_code = 502
    type = "guard_error"
    param = None

    def __init__(self) -> None:
        super().__init__(MALFORMED_REPLY)
        self.message = MALFORMED_REPLY


class _Router(Protocol):
    async def acompletion(self, **kwargs: Any) -> Any: ...


class ScaffoldGuardrail(CustomGuardrail):
    """The scaffolding guardrail on LiteLLM's proxy (module docstring)."""

    def __init__(self, profiles: str | Sequence[str] | None = None, **kwargs: Any) -> None:
        self.profiles: ProfileChoice = _profile_choice(profiles)
        kwargs.setdefault("supported_event_hooks", [GuardrailEventHooks.post_call])
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]  (its **kwargs are untyped)

    async def async_post_call_streaming_iterator_hook(
        self,
        user_api_key_dict: UserAPIKeyAuth,
        response: Any,
        request_data: dict[str, Any],
    ) -> AsyncGenerator[ModelResponseStream]:
        chunks = aiter(cast(AsyncIterable[object], response))
        head = await anext(chunks, _NOTHING)
        registry = self._registry(request_data, head)
        first = StreamFilter(registry, single=single_choice(request_data))
        async for chunk in _prepend(head, chunks):
            if not isinstance(chunk, ModelResponseStream):
                yield cast(ModelResponseStream, chunk)  # not a chat chunk: not ours to judge
                continue
            if (out := first.chunk(chunk)) is not None:
                yield out
        tails = first.end()
        _warn(first.stripped_chars, first.first_span, 1)
        if not first.wants_recovery:
            for tail in tails:
                yield tail
            return
        second = StreamFilter(registry, follows=first)
        recovery = await _recover(request_data, stream=True)
        try:
            async for chunk in cast(AsyncIterable[ModelResponseStream], recovery):
                if (out := second.chunk(chunk)) is not None:
                    yield out
                elif second.ended_empty:
                    break  # its finish showed nothing: the error ends the stream instead
        finally:
            await _close(recovery)
        tails = second.end()
        _warn(second.stripped_chars, second.first_span, 2)
        if second.malformed:
            raise MalformedReplyError
        for tail in tails:
            yield tail

    async def async_post_call_success_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: UserAPIKeyAuth,
        response: LLMResponseTypes,
    ) -> Any:
        if not isinstance(response, ModelResponse):
            return response
        registry = self._registry(data, response)
        first = CompletionFilter(registry, single=single_choice(data))
        first.filter(response)
        _warn(first.stripped_chars, first.first_span, 1)
        if not first.wants_recovery:
            return response
        recovery = await _recover(data, stream=False)
        if not isinstance(recovery, ModelResponse):
            raise MalformedReplyError
        second = CompletionFilter(registry, follows=first)
        second.filter(recovery)
        _warn(second.stripped_chars, second.first_span, 2)
        if second.malformed:
            raise MalformedReplyError
        return recovery

    def _registry(self, request: Mapping[str, object], answer: object) -> Registry:
        """The registry of the answer to `request`, `answer` its first chunk or itself."""
        return self.profiles.registry(*model_names(request, answer))


def model_names(request: Mapping[str, object], answer: object) -> tuple[object, ...]:
    """The names an answer goes by: the client's `model` (the proxy's alias), the model
    group and the deployment's model LiteLLM's router picked, and the answer's `model`."""
    names: list[object] = [request.get("model")]
    for key in METADATA_KEYS:
        metadata = request.get(key)
        if isinstance(metadata, Mapping):
            metadata = cast(Mapping[str, object], metadata)
            names += [metadata.get("model_group"), metadata.get("deployment")]
    return (*names, getattr(answer, "model", None))


async def _prepend(head: object, rest: AsyncIterator[object]) -> AsyncIterator[object]:
    """`head` (when the stream had a first item) and then the rest of the stream."""
    if head is not _NOTHING:
        yield head
    async for item in rest:
        yield item


async def _recover(request: Mapping[str, object], *, stream: bool) -> object:
    """The one recovery request: through the running proxy's router, else litellm's own."""
    router = _proxy_router()
    kwargs = recovery_request(request, stream=stream, endpoint=router is None)
    if router is not None:
        return await router.acompletion(**kwargs)
    return await litellm.acompletion(**kwargs)


def _proxy_router() -> _Router | None:
    server = sys.modules.get(PROXY_SERVER)
    router: object = getattr(server, "llm_router", None)
    return cast(_Router, router) if router is not None else None


async def _close(stream: object) -> None:
    aclose: object = getattr(stream, "aclose", None)
    if callable(aclose):
        await cast(Any, aclose)()


def _warn(stripped_chars: int, first_span: str, round_number: int) -> None:
    if stripped_chars:
        LOG.warning(strip_warning(stripped_chars, round_number, first_span))


def _profile_choice(profiles: str | Sequence[str] | None) -> ProfileChoice:
    if profiles is None:
        return AUTO
    return parse_profiles(profiles if isinstance(profiles, str) else ",".join(profiles))
