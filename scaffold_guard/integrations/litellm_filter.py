"""What LiteLLM's chat completion objects become under the guardrail. Pure: no I/O, no model.

`StreamFilter` filters each choice's `delta.content` of a stream's chunks in place (None
when nothing is left of a chunk; the held tail on the finish chunk or at `end()`), and
drops the finish of a reply that showed nothing (`ended_empty`). `CompletionFilter` does
the same for a whole `ModelResponse`; `recovery_request` is the one recovery (G2).

Deliberate choices:
- Only the answer text is filtered; reasoning and tool calls pass untouched (G9, G12),
  and a round with a tool call never recovers. An unchanged chunk is the same object.
- The recovery is for a single-choice reply only: with several there is no one to ask again.
- A recovery's chunks take the first reply's id, time and model and lose their role, so
  the client sees one completion; an empty recovery's finish is dropped too, so the
  error, not a finish, ends it.
- The recovery request carries an allow-list of the client's settings, not LiteLLM's
  whole dict, which holds the proxy's bookkeeping (logging object, key metadata).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, cast

from litellm import ModelResponse, ModelResponseStream, StreamingChoices

# litellm.types is a namespace package (no __init__.py), so pyright sees no py.typed marker
# for it and asks for stubs; it reads the annotated source all the same.
from litellm.types.utils import Delta  # pyright: ignore[reportMissingTypeStubs]

from guardrail.json_shapes import as_array
from guardrail.patterns import Registry
from guardrail.policy import RoundFilter, with_correction
from guardrail.reply import ReplyFilters

__all__ = [
    "ENDPOINT_PARAMS",
    "RECOVERY_PARAMS",
    "TOOL_PARAMS",
    "CompletionFilter",
    "StreamFilter",
    "recovery_request",
    "single_choice",
]

RECOVERY_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "response_format",
    "reasoning_effort",
    "user",
)
"""The client's generation settings that the recovery request repeats."""

ENDPOINT_PARAMS = ("api_base", "base_url", "api_key", "api_version", "custom_llm_provider")
"""Where the model is, when the request itself says so (a call outside the proxy, which
has no router to resolve the model's name)."""

TOOL_PARAMS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")
"""What the recovery never carries (G2: `tools` absent; the rest only make sense with it)."""

_IDENTITY = ("id", "created", "model")


def single_choice(request: Mapping[str, object]) -> bool:
    """Whether the request asked for one choice (`n` absent or 1)."""
    n = request.get("n")
    return n is None or n == 1


class _Reply(ReplyFilters):
    """A reply's filters and decisions (`guardrail.reply.ReplyFilters`), with its identity
    taken from, or given to, LiteLLM's objects."""

    def __init__(
        self, registry: Registry, *, single: bool = True, follows: Self | None = None
    ) -> None:
        super().__init__(registry, single_choice=single, follows=follows)

    def take_identity(self, message: ModelResponseStream | ModelResponse) -> None:
        """A first reply remembers its id, creation time and model; a recovery takes them."""
        if self.follows is None:
            if not self.identity:
                self.identity = {k: getattr(message, k, None) for k in _IDENTITY}
            return
        self.identity = self.follows.identity
        for key, value in self.identity.items():
            if value is not None and getattr(message, key, None) != value:
                setattr(message, key, value)


class StreamFilter(_Reply):
    """The guardrail over one stream of `ModelResponseStream` chunks (module docstring)."""

    def __init__(
        self, registry: Registry, *, single: bool = True, follows: Self | None = None
    ) -> None:
        super().__init__(registry, single=single, follows=follows)
        self._open: dict[int, RoundFilter] = {}
        self.ended_empty = False  # the reply finished showing nothing: the rest is dropped

    def chunk(self, chunk: ModelResponseStream) -> ModelResponseStream | None:
        """`chunk` with its answer text filtered in place, or None when it is dropped."""
        if self.ended_empty:
            return None
        self.take_identity(chunk)
        changed = finished = False
        for choice in chunk.choices:
            changed = self._choice(choice) or changed
            finished = finished or choice.finish_reason is not None
        if finished and (self.wants_recovery or self.malformed):
            self.ended_empty = True
            return None
        if changed and not _says_anything(chunk):
            return None
        return chunk

    def end(self) -> list[ModelResponseStream]:
        """Once the stream ended: what the filters of unfinished choices still held, one
        chunk per choice; nothing when it showed nothing (`ended_empty`)."""
        if self.wants_recovery or self.malformed:
            self.ended_empty = True  # a stream that ended without a finish chunk
        if self.ended_empty:
            return []
        tails = [(index, f.flush(), f.take_reasoning()) for index, f in sorted(self._open.items())]
        self._open.clear()
        return [
            self._content_chunk(index, text, thought)
            for index, text, thought in tails
            if text or thought
        ]

    def _choice(self, choice: StreamingChoices) -> bool:
        """Filter one choice's delta in place; whether anything in it changed."""
        delta = choice.delta
        changed = False
        if self.follows is not None and delta.role is not None:
            delta.role = None  # the client saw the first stream's role
            changed = True
        if delta.tool_calls or delta.function_call:
            self.tool_calls = True
        content: object = delta.content
        text = content if isinstance(content, str) else ""
        index = _index(choice)
        filter_ = self._open.get(index)
        if filter_ is None and text:
            filter_ = self._open[index] = self.new_filter()
        if filter_ is None:
            return changed
        shown = filter_.feed(text) if text else ""
        if choice.finish_reason is not None:
            shown += filter_.flush()  # the choice ends here: what was held is text
            del self._open[index]
        thought = filter_.take_reasoning()
        if shown == text and not thought:
            return changed
        delta.content = shown or None
        if thought:
            before: object = getattr(delta, "reasoning_content", None)  # absent when None
            delta.reasoning_content = _joined(before, thought)
        return True

    def _content_chunk(self, index: int, text: str, thought: str) -> ModelResponseStream:
        identity = self.identity
        delta = Delta(content=text or None, reasoning_content=thought or None)
        return ModelResponseStream(
            id=cast(str | None, identity.get("id")),
            created=cast(int | None, identity.get("created")),
            model=identity.get("model"),
            choices=[StreamingChoices(index=index, delta=delta)],
        )


class CompletionFilter(_Reply):
    """The guardrail over one whole `ModelResponse` (module docstring)."""

    def filter(self, completion: ModelResponse) -> None:
        """Filter every choice's `message.content` in place, each as one whole stream."""
        self.take_identity(completion)
        for choice in completion.choices:
            message: object = getattr(choice, "message", None)
            if message is None:
                continue
            if getattr(message, "tool_calls", None) or getattr(message, "function_call", None):
                self.tool_calls = True
            content: object = getattr(message, "content", None)
            if not isinstance(content, str):
                continue
            whole = self.new_filter()
            shown = whole.feed(content) + whole.flush()
            if shown != content:
                setattr(message, "content", shown)  # noqa: B010  (Message's type has no setter)
            if thought := whole.take_reasoning():
                before: object = getattr(message, "reasoning_content", None)
                setattr(message, "reasoning_content", _joined(before, thought))  # noqa: B010


def recovery_request(
    request: Mapping[str, object], *, stream: bool, endpoint: bool
) -> dict[str, Any]:
    """The one recovery's keyword arguments for `acompletion` (G2): `request`'s model and
    messages with the correction folded in, its generation settings (RECOVERY_PARAMS),
    where the model is when `endpoint` (ENDPOINT_PARAMS), no tools (TOOL_PARAMS)."""
    messages = request.get("messages")
    listed = [cast(Mapping[str, Any], m) for m in as_array(messages) if isinstance(m, Mapping)]
    out: dict[str, Any] = {"model": request.get("model"), "messages": with_correction(listed)}
    for key in RECOVERY_PARAMS + (ENDPOINT_PARAMS if endpoint else ()):
        if request.get(key) is not None:
            out[key] = request[key]
    if stream:
        out["stream"] = True
        if request.get("stream_options") is not None:
            out["stream_options"] = request["stream_options"]
    return out


def _joined(before: object, thought: str) -> str:
    """Reasoning routed out of the content (gpt-oss's analysis channel) after the
    reasoning the provider already gave."""
    return (before if isinstance(before, str) else "") + thought


def _index(choice: StreamingChoices) -> int:
    index = cast(object, choice.index)  # a hostile upstream's index may be anything
    return index if isinstance(index, int) else 0


def _says_anything(chunk: ModelResponseStream) -> bool:
    """Whether a chunk the filter changed still says something: a delta field, a finish,
    log probabilities, usage, or a provider's own fields."""
    if getattr(chunk, "usage", None) is not None or chunk.provider_specific_fields:
        return True
    for choice in chunk.choices:
        if choice.finish_reason is not None or getattr(choice, "logprobs", None) is not None:
            return True
        fields = cast(dict[str, object], choice.delta.model_dump(exclude_none=True))
        if any(value != "" for value in fields.values()):
            return True
    return False
