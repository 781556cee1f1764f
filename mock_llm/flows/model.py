"""The flow model: what a flow is, step by step, independent of how it was written down.

A flow is a named, ordered list of steps; the n-th request of a turn plays step n. A step
says what one response carries, how it is chunked and paced, and optionally one fault.
Built-in flows and flow files parse into these immutable types, so there is one schema.

Deliberate choice: `Expect` (the outcome a guarded app must reach) and a flow's `family`,
`written_by` and `elsewhere` are data for checkers such as the conformance kit; the mock
itself never acts on them (docs/mock_llm.md, "Family flows"). Which family a model name
names is the mock's own table (families.py), never the guard's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mock_llm.flows.families import written_for

ChunkingMode = Literal["whole", "char", "word", "size"]
ReasoningField = Literal["reasoning_content", "reasoning", "both"]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]
CutMode = Literal["abort", "eof"]
ExpectedError = Literal["malformed"]
ChunkPart = Literal["reasoning", "content", "call"]

REASONING_FIELDS: tuple[ReasoningField, ...] = ("reasoning_content", "reasoning", "both")
Dialect = Literal["openai", "llama.cpp"]
"""How a chat-completions answer is framed: as OpenAI's API frames it, or as llama.cpp's
llama-server does (mock_llm/wire/openai.py)."""
DIALECTS: tuple[Dialect, ...] = ("openai", "llama.cpp")
FINISH_REASONS: tuple[FinishReason, ...] = ("stop", "length", "tool_calls", "content_filter")


@dataclass(frozen=True)
class Chunking:
    """How a text is cut into stream chunks: whole, per character, per word, or N chars."""

    mode: ChunkingMode = "word"
    size: int = 0

    def describe(self) -> str:
        return str(self.size) if self.mode == "size" else self.mode


@dataclass(frozen=True)
class ToolCall:
    """A real (structured) tool call; `arguments` is the JSON text the model would send."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class HttpFault:
    """Answer with an HTTP error status and the OpenAI error body instead of a completion."""

    status: int
    message: str
    type: str
    code: str | None = None
    retry_after: float | None = None


@dataclass(frozen=True)
class CutFault:
    """End the stream after `after_chunks` chunk frames.

    `abort` closes the connection mid-body (clients see an incomplete read); `eof` ends the
    body cleanly but without a finish_reason or `[DONE]`.
    """

    after_chunks: int
    mode: CutMode = "abort"


@dataclass(frozen=True)
class StallFault:
    """Go silent for `seconds` after `after_chunks` chunk frames, then carry on."""

    after_chunks: int
    seconds: float


@dataclass(frozen=True)
class MalformedFault:
    """Send `line` (not valid JSON) as a `data:` line after `after_chunks` frames, then go on."""

    after_chunks: int
    line: str = "{this is not json"


@dataclass(frozen=True)
class ErrorEventFault:
    """Send an in-band `data: {"error": ...}` event after `after_chunks` frames and end."""

    after_chunks: int
    message: str
    type: str = "server_error"
    code: str | None = None


Fault = HttpFault | CutFault | StallFault | MalformedFault | ErrorEventFault


EXTRACT_SENTENCES_MAX = 10


@dataclass(frozen=True)
class Extract:
    """A step whose content is built from the request (`extractive.py`): at most `sentences`
    sentences of its context that match the question, after `preamble`; `fallback` when
    none does; first a `read` tool call on the note the question names, when set."""

    sentences: int = 3
    fallback: str = "The notes I was given do not say; ask about something they cover."
    preamble: str = "From the notes:"
    read: str | None = None
    """A tool's name: when the request offers it, the question names a note of its context
    and no tool result came after the question, the step calls it (`{"path": note}`)
    instead of answering; the next request, with the note's text, gets the answer."""


@dataclass(frozen=True)
class RecordedChunk:
    """One delta chunk of a recorded stream (`python -m mock_llm record`), replayed as is.

    `part` says what the chunk carries: a piece of the reasoning, of the content, or of the
    arguments of tool call `call` (0-based; the first chunk of a call is its opening, which
    also carries its id and name). `after_ms` is the gap before the chunk: the first chunk's
    counted from the start of the response, every other one's from the chunk before it.
    """

    part: ChunkPart
    text: str
    call: int | None = None
    after_ms: float = 0.0


@dataclass(frozen=True)
class Step:
    """One response of a flow. With `extract`, the content is built per request instead.

    A recorded step carries its chunks in `recorded` (reasoning pieces, then content, then
    each tool call's argument pieces by index): they replace the cut by `chunking` and the
    pacing of `ttft_ms`/`delay_ms`, and `content`, `reasoning` and each call's `arguments`
    are their joins.
    """

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: FinishReason | None = None
    chunking: Chunking = Chunking()
    delay_ms: float = 0.0
    ttft_ms: float = 0.0
    reasoning_field: ReasoningField | None = None
    dialect: Dialect | None = None
    """The chat-completions framing this step is played in (None: the server's `--dialect`);
    a recording from llama.cpp's server keeps `llama.cpp`."""
    fault: Fault | None = None
    extract: Extract | None = None
    recorded: tuple[RecordedChunk, ...] = ()

    @property
    def resolved_finish_reason(self) -> FinishReason:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class Expect:
    """The outcome of a whole turn of a flow, as a guarded app that runs tool calls ends it.

    `shown` is the exact answer text the user sees once the turn is over; `recovery` says
    whether the app sends its one recovery request (G2); `stripped_chars` is the markup
    stripped from the answer, summed over every request of the turn (G10); `error` is
    `malformed` when the turn must end in the malformed-reply error (G3), else None;
    `requests` counts the turn's upstream requests, recovery and tool rounds included.
    """

    shown: str
    recovery: bool
    stripped_chars: int
    error: ExpectedError | None
    requests: int


@dataclass(frozen=True)
class Flow:
    """A named list of steps; `canary` is a string its markup carries that must never show."""

    name: str
    description: str
    steps: tuple[Step, ...]
    canary: str | None = None
    source: str = "builtin"
    expect: Expect | None = None
    family: str | None = None
    """The model family whose own leak shape the flow plays (a name of
    families.FAMILY_NAMES): `expect` is then the outcome for a model of that family (or of
    `written_by`), `elsewhere` the outcome for any other model."""
    elsewhere: Expect | None = None
    """A family flow's outcome for a model of another family, where its markup is a
    look-alike (shown as text); None when the shape is stripped whatever the model is
    (special tokens), so `expect` holds everywhere."""
    written_by: tuple[str, ...] = ()
    """Other families whose models write the same markup (GLM and Qwen3-Coder wrap their
    calls in Qwen's `<tool_call>`): `expect` holds for them too."""

    by_family: tuple[tuple[str, Expect], ...] = ()
    """Outcomes for the models of other families, where neither `expect` nor `elsewhere` is
    what a correct page shows: a Qwen3-Coder model strips the `<function=` call inside
    Seed-OSS's `<seed:tool_call>`, its own syntax, and shows the wrapper."""

    def expect_for(self, model: object) -> Expect | None:
        """The outcome for an app whose upstream requests name `model`."""
        writers = (self.family, *self.written_by) if self.family else ()
        return outcome_for(model, self.expect, self.elsewhere, writers, self.by_family)

    def step_for(self, index: int) -> Step:
        """The step for the 0-based request index; the last step repeats."""
        return self.steps[min(index, len(self.steps) - 1)]


def outcome_for(
    model: object,
    expect: Expect | None,
    elsewhere: Expect | None,
    writers: tuple[str, ...],
    by_family: tuple[tuple[str, Expect], ...],
) -> Expect | None:
    """What a flow states for an app whose requests name `model`: `expect` for a model of
    one of the `writers` (and for every model where the flow states no `elsewhere`), the
    first `by_family` outcome whose family the model is of, else `elsewhere`."""
    if elsewhere is None or written_for(writers, model):
        return expect
    return next((want for family, want in by_family if written_for((family,), model)), elsewhere)


def describe_fault(fault: Fault) -> str:
    """A short label for the journal, e.g. `cut(abort) after 3 chunks`."""
    if isinstance(fault, HttpFault):
        return f"http {fault.status}"
    if isinstance(fault, CutFault):
        return f"cut({fault.mode}) after {fault.after_chunks} chunks"
    if isinstance(fault, StallFault):
        return f"stall {fault.seconds:g}s after {fault.after_chunks} chunks"
    if isinstance(fault, MalformedFault):
        return f"malformed line after {fault.after_chunks} chunks"
    return f"error event after {fault.after_chunks} chunks"
