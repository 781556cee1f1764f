"""Real LiteLLM chunk and completion objects, built as LiteLLM's proxy hands them to a
guardrail (a role chunk, content chunks, a finish chunk with an empty delta, a usage chunk),
and the text a client reads off what a guardrail gives back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from litellm import Choices, Message, ModelResponse, ModelResponseStream, StreamingChoices
from litellm.types.utils import Delta  # pyright: ignore[reportMissingTypeStubs]

ID, CREATED, MODEL = "chatcmpl-first", 1_700_000_000, "lfm2"

THIRD_PARTY_WARNINGS = pytest.mark.filterwarnings(
    "ignore:Items? .* using the `ReadOnly` qualifier:UserWarning"
)
"""litellm's types trip a pydantic warning when their schema is first built (its
TypedDicts mark fields ReadOnly, which pydantic cannot enforce): not ours, not a defect."""


def _named(identity: tuple[str, int, str]) -> dict[str, Any]:
    """The id, created and model fields every chunk and completion carries."""
    id_, created, model = identity
    return {"id": id_, "created": created, "model": model}


def chunk(
    content: str | None = None,
    *,
    index: int = 0,
    finish: str | None = None,
    identity: tuple[str, int, str] = (ID, CREATED, MODEL),
    **delta: Any,
) -> ModelResponseStream:
    """One chunk of one choice (`delta` takes role, reasoning_content, tool_calls...)."""
    return ModelResponseStream(
        **_named(identity),
        choices=[
            StreamingChoices(
                index=index, delta=Delta(content=content, **delta), finish_reason=finish
            )
        ],
    )


def usage_chunk(identity: tuple[str, int, str] = (ID, CREATED, MODEL)) -> ModelResponseStream:
    return ModelResponseStream(
        **_named(identity),
        choices=[StreamingChoices(index=0, delta=Delta())],
        usage={"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14},
    )


def stream(
    pieces: Iterable[str],
    *,
    finish: bool = True,
    usage: bool = False,
    identity: tuple[str, int, str] = (ID, CREATED, MODEL),
) -> list[ModelResponseStream]:
    """A whole stream as LiteLLM relays an OpenAI one: the role, the pieces, the finish."""
    out = [chunk("", role="assistant", identity=identity)]
    out += [chunk(piece, identity=identity) for piece in pieces]
    if finish:
        out.append(chunk(finish="stop", identity=identity))
    if usage:
        out.append(usage_chunk(identity))
    return out


def completion(
    *contents: str | None, identity: tuple[str, int, str] = (ID, CREATED, MODEL), **message: Any
) -> ModelResponse:
    """A whole completion with one choice per content (`message` takes tool_calls...)."""
    return ModelResponse(
        **_named(identity),
        choices=[
            Choices(
                index=i,
                message=Message(content=content, role="assistant", **message),
                finish_reason="stop",
            )
            for i, content in enumerate(contents)
        ],
    )


def shown(chunks: Sequence[ModelResponseStream], index: int = 0) -> str:
    """The answer text a client assembles for choice `index`."""
    return "".join(
        choice.delta.content or ""
        for c in chunks
        for choice in c.choices
        if choice.index == index and isinstance(choice.delta.content, str)
    )


def finishes(chunks: Sequence[ModelResponseStream]) -> list[str]:
    return [choice.finish_reason for c in chunks for choice in c.choices if choice.finish_reason]


def roles(chunks: Sequence[ModelResponseStream]) -> list[str]:
    return [choice.delta.role for c in chunks for choice in c.choices if choice.delta.role]
