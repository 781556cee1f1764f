"""Drive a ScaffoldingFilter over a chunked text (shared by the scaffolding test files)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from guardrail.patterns import Registry
from guardrail.registries import DEFAULT_REGISTRY
from guardrail.scaffolding import ScaffoldingFilter


def chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def cut_at(text: str, *offsets: int) -> list[str]:
    bounds = [0, *sorted(offsets), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def cut_anywhere(text: str, cuts: list[int]) -> list[str]:
    """`text` cut at `cuts`, each taken modulo len(text) + 1 (any integers hypothesis draws)."""
    return cut_at(text, *(c % (len(text) + 1) for c in cuts))


def run(
    chunks: Iterable[str], registry: Registry = DEFAULT_REGISTRY
) -> tuple[str, ScaffoldingFilter]:
    f = ScaffoldingFilter(registry)
    out = "".join(f.feed(chunk) for chunk in chunks) + f.flush()
    return out, f


def reasoned(chunks: Iterable[str], registry: Registry) -> tuple[str, str, ScaffoldingFilter]:
    """What `chunks` show and the reasoning routed out of them, taken after every feed and
    after the flush, as the app and the guard take it; and the filter."""
    f = ScaffoldingFilter(registry)
    shown: list[str] = []
    thought: list[str] = []
    for chunk in chunks:
        shown.append(f.feed(chunk))
        thought.append(f.take_reasoning())
    shown.append(f.flush())
    thought.append(f.take_reasoning())
    return "".join(shown), "".join(thought), f


def strip(text: str, registry: Registry = DEFAULT_REGISTRY) -> str:
    return run([text], registry)[0]


def routed_reasoning(text: str, registry: Registry) -> str:
    """The reasoning a filter routes out of `text` as one whole stream (gpt-oss's analysis
    channel written as text)."""
    return run([text], registry)[1].take_reasoning()


HARMONY_REASONING = "Check the notes."
HARMONY_ANSWER = "Nightly at 02:00."
HARMONY_REPLY = (
    f"<|channel|>analysis<|message|>{HARMONY_REASONING}<|end|><|start|>assistant"
    f"<|channel|>final<|message|>{HARMONY_ANSWER}<|return|>"
)
"""gpt-oss's analysis channel, then its answer, as a server that does not parse harmony
writes them into the answer text (llama.cpp tests/test-chat.cpp, GPT-OSS)."""


def untouchable(text: str, registry: Registry) -> bool:
    """No opener of `registry` can begin in `text`: the filter neither strips nor holds back
    any of it, so a guard passes its frames on byte for byte."""
    return not any(pattern.start[0] in text for pattern in registry)
