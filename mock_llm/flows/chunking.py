"""Cut a step's texts into stream chunks, and pace them. Joining the chunks always gives the
text back exactly.

Every wire format asks here, and only here, what a step streams and when: `pieces`, and
the pauses `ttft_s`, `gap_s` and `answer_delay_s`. An authored step cuts by `chunking`;
a recorded step streams its recorded pieces and gaps, scaled by `paced`
(`--replay-pacing`). `step_parts` serves the formats that announce each part (Responses
items, Messages blocks); `TimedFrames` collects frames with their pauses.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace

from mock_llm.flows.model import Chunking, ChunkPart, Step

_WORD = re.compile(r"\s*\S+|\s+")
REAL_PACING = 1.0
"""Replay recorded gaps as they were recorded."""
NO_PACING = 0.0
"""Replay recorded chunks with no pauses at all."""


def split(text: str, chunking: Chunking) -> list[str]:
    """The chunks of `text`: whole, one code point each, word by word, or N code points each.

    Words keep their leading whitespace, as model tokens do (" world"), and a whitespace
    tail becomes its own chunk. Empty text gives no chunks.
    """
    if not text:
        return []
    if chunking.mode == "whole":
        return [text]
    if chunking.mode == "char":
        return list(text)
    if chunking.mode == "word":
        return _WORD.findall(text)
    size = chunking.size
    return [text[i : i + size] for i in range(0, len(text), size)]


@functools.lru_cache(maxsize=512)
def _split(text: str, chunking: Chunking) -> tuple[str, ...]:
    return tuple(split(text, chunking))


def pieces(step: Step, part: ChunkPart, call: int | None = None) -> tuple[str, ...]:
    """The chunks `part` of `step` streams in, in order: for `call`, tool call number `call`
    (0-based). A recorded step gives its recorded pieces (the first of a call is its
    opening, which may be empty); any other step its text cut by its chunking."""
    if step.recorded:
        return tuple(c.text for c in step.recorded if c.part == part and c.call == call)
    if part == "call":
        assert call is not None
        text = step.tool_calls[call].arguments
    else:
        text = step.reasoning if part == "reasoning" else step.content
    return _split(text, step.chunking)


def ttft_s(step: Step) -> float:
    """The pause before a stream's first frame, in seconds: `ttft_ms`. A recorded step has
    none there: its first gap comes before its first recorded chunk."""
    return 0.0 if step.recorded else step.ttft_ms / 1000


def gap_s(step: Step, index: int) -> float:
    """The pause before the step's delta chunk number `index` (0-based, over reasoning,
    content and tool-call pieces in that order), in seconds: `delay_ms`, or for a recorded
    step that chunk's recorded gap."""
    if not step.recorded:
        return step.delay_ms / 1000
    if index >= len(step.recorded):
        return 0.0
    return step.recorded[index].after_ms / 1000


def whole_calls_pauses(step: Step, texts: int) -> list[float]:
    """The pause before each frame of a format that streams a step's text pieces one frame
    each (`texts` of them) and its tool calls whole, in one frame after them (Ollama,
    Gemini): an authored step waits `ttft_ms` before the first frame and `delay_ms` before
    each other; a recorded step's text frame waits its chunk's gap, and the calls' frame the
    gaps of all the calls' chunks."""
    frames = texts + (1 if step.tool_calls else 0)
    if not step.recorded:
        return [gap_s(step, index) if index else ttft_s(step) for index in range(frames)]
    pauses = [gap_s(step, index) for index in range(texts)]
    if step.tool_calls:
        pauses.append(sum(gap_s(step, index) for index in range(texts, len(step.recorded))))
    return pauses


def answer_delay_s(step: Step) -> float:
    """The pause before a whole (not streamed) answer or an HTTP fault, in seconds:
    `ttft_ms`, or for a recorded step the whole stream's recorded time."""
    if not step.recorded:
        return step.ttft_ms / 1000
    return sum(c.after_ms for c in step.recorded) / 1000


def paced(step: Step, pacing: float) -> Step:
    """`step` with its recorded gaps multiplied by `pacing` (1: as recorded, 0: none). An
    authored step keeps its `delay_ms` and `ttft_ms`: pacing is for recordings only."""
    if not step.recorded or pacing == REAL_PACING:
        return step
    recorded = tuple(replace(c, after_ms=c.after_ms * pacing) for c in step.recorded)
    return replace(step, recorded=recorded)


def parse_pacing(text: str) -> float:
    """`real` (1), `none` (0) or a positive factor, as `--replay-pacing` takes it;
    ValueError otherwise."""
    if text == "real":
        return REAL_PACING
    if text == "none":
        return NO_PACING
    try:
        factor = float(text)
    except ValueError:
        factor = math.nan
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"expected real, none or a positive number, not {text!r}")
    return factor


@dataclass(frozen=True)
class Part:
    """One part of a step as a block format streams it, with its timeline.

    `opening_pause` is due before the part is announced: the gap of its first chunk (an
    authored step's first chunk has none: the time to first token, the caller's, comes
    first). `opening` is a recorded tool call's first piece, which opened the call (its
    text, when any, is the part's first delta); None for every other part. `deltas` are
    the other pieces, each with the pause before it (the first one's is paid by the
    opening)."""

    kind: ChunkPart
    call: int | None
    opening_pause: float
    opening: str | None
    deltas: tuple[tuple[float, str], ...]


def step_parts(step: Step) -> list[Part]:
    """The step's parts in streaming order: the reasoning (when there is some), the answer
    (when there is one, or no tool call), each tool call."""
    kinds: list[tuple[ChunkPart, int | None]] = []  # a part's kind, and its tool call
    if step.reasoning:
        kinds.append(("reasoning", None))
    if step.content or not step.tool_calls:
        kinds.append(("content", None))
    kinds.extend(("call", index) for index in range(len(step.tool_calls)))
    parts: list[Part] = []
    chunk = 0  # the delta chunk number over the whole step, as `gap_s` counts them
    for kind, call in kinds:
        chunks = pieces(step, kind, call)
        opening_pause = _chunk_gap(step, chunk) if chunks else 0.0
        opening = chunks[0] if kind == "call" and step.recorded and chunks else None
        if opening is not None:
            chunks = chunks[1:]
            chunk += 1
        deltas: list[tuple[float, str]] = []
        for number, piece in enumerate(chunks):
            paid = not number and opening is None  # by the part's opening pause
            deltas.append((0.0 if paid else _chunk_gap(step, chunk), piece))
            chunk += 1
        parts.append(Part(kind, call, opening_pause, opening, tuple(deltas)))
    return parts


def _chunk_gap(step: Step, chunk: int) -> float:
    """The pause before delta chunk number `chunk`; an authored step's first chunk has
    none of its own (the time to first token comes before it)."""
    return gap_s(step, chunk) if step.recorded or chunk else 0.0


class TimedFrames:
    """The frames of a stream being built, each with the pause before it, in seconds; a
    pause owed (`pending`) goes before the next frame added."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, bytes]] = []
        self.pending = 0.0

    def add(self, frame: bytes, pause: float = 0.0) -> None:
        pause, self.pending = self.pending + pause, 0.0
        self.frames.append((pause, frame))
