"""The parts of an OpenAI chat completion or stream chunk, read leniently. Pure.

Three readers take chunks apart: the notes app's model client (scaffold_guard.app.rag.llm_chunks),
the guard (guard.wire.chat_stream, guard.wire.chat_whole) and the mock's recorder
(mock_llm.record.recording).
Each decides what it keeps; what they read the same way is here, and a field of the wrong
type reads as absent, as the SDKs' lenient models let it through:

- `choices_of`: the choices that are objects (none when `choices` is not a list: vLLM's
  usage chunk has null); `first_choice`, choice 0 of them (else the first);
- `delta_of` and `message_of`: a chunk choice's `delta`, a completion choice's `message`;
- `reasoning_texts`: the reasoning fields (`reasoning_content`, `reasoning`) that hold text;
  `add_reasoning`, more reasoning written into a delta or message (the guard's, routed out
  of the answer text), with `append_text`;
- `tool_call_items`: a delta's tool-call pieces, with their places in its list;
- `DONE_EVENT`: the event that ends a stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardrail.json_shapes import JSONObject, as_array, as_object, is_object, objects

__all__ = [
    "DONE_EVENT",
    "REASONING_FIELDS",
    "add_reasoning",
    "append_text",
    "choices_of",
    "delta_of",
    "first_choice",
    "message_of",
    "reasoning_texts",
    "tool_call_items",
]

DONE_EVENT = b"data: [DONE]\n\n"
REASONING_FIELDS = ("reasoning_content", "reasoning")
"""The delta fields servers put reasoning in (vLLM and llama.cpp, some others), in the order
a reader prefers them."""


def choices_of(message: Mapping[str, object]) -> list[JSONObject]:
    """The choices of a chunk or completion that are objects (none when `choices` is not a
    list)."""
    return objects(message.get("choices"))


def first_choice(choices: list[JSONObject]) -> JSONObject:
    """Choice 0 of `choices` (else the first; `{}` when there is none)."""
    for choice in choices:
        if choice.get("index", 0) == 0:
            return choice
    return choices[0] if choices else {}


def delta_of(choice: Mapping[str, object]) -> JSONObject | None:
    """A stream chunk's choice's `delta`, when it is an object."""
    return as_object(choice.get("delta"))


def message_of(choice: Mapping[str, object]) -> JSONObject | None:
    """A whole completion's choice's `message`, when it is an object."""
    return as_object(choice.get("message"))


def reasoning_texts(delta: Mapping[str, object]) -> dict[str, str]:
    """The reasoning fields of a delta (or message) that hold text, by name, in
    `REASONING_FIELDS` order."""
    return {
        name: text for name in REASONING_FIELDS if isinstance(text := delta.get(name), str) and text
    }


def add_reasoning(holder: dict[str, object], text: str) -> None:
    """Append `text` to a delta's or message's reasoning: to the field it already holds text
    in (`REASONING_FIELDS` order), else to `reasoning_content`, which every reader knows."""
    name = next(
        (n for n in REASONING_FIELDS if isinstance(holder.get(n), str)), "reasoning_content"
    )
    append_text(holder, name, text)


def append_text(holder: dict[str, Any], name: str, text: str) -> None:
    """`text` at the end of `holder[name]` (which becomes `text` when it holds no string)."""
    before = holder.get(name)
    holder[name] = (before if isinstance(before, str) else "") + text


def tool_call_items(delta: Mapping[str, object]) -> list[tuple[int, JSONObject]]:
    """The tool-call pieces of a delta (or message) that are objects, each with its place in
    the `tool_calls` list (a piece without an `index` is known by it)."""
    calls = as_array(delta.get("tool_calls"))
    return [(position, item) for position, item in enumerate(calls) if is_object(item)]
