"""Strip a model's raw tool-call scaffolding from streamed answer text, chunk by chunk.

This is the guardrail's core: a pure, incremental filter (no I/O, no model, no imports from
the rest of the app). `feed(chunk)` returns the text that is safe to show now; `flush()`
returns what was held back when the stream ends. Which markup counts as scaffolding is
data: a registry of patterns, each traced to the public template or parser it comes from.
The default registry is LFM2's: the span `<|tool_call_start|>`...`<|tool_call_end|>` and
the standalone tokens `<|tool_calls|>` and `<|tool_call|>`. Other families' formats are
opt-in profiles (`registry_with("hermes", ...)`), never on by default.

Semantics (docs/contract.md states them for users; tests pin them):
- An opener (a span's start marker or a standalone token) is matched exactly, wherever it
  falls across chunks. Inside a span only that span's end markers matter: a start marker
  quoted inside a span is data. A span whose end never comes is stripped to the end of the
  stream. Look-alikes are text: an unknown `<|token|>`, a lone end marker, `a < b`.
- Minimal hold-back: after every feed, exactly the longest suffix that could still become a
  marker is held back (outside a span: a proper prefix of an opener; inside: of an end
  marker), and nothing when no marker could start there. Clean text is never delayed.
- At stream end a held partial opener is released as it is (it was text after all).
- Plain-text markers (not special tokens, e.g. Hermes `<tool_call>`) are left alone inside
  fenced code blocks, so a markdown example is not eaten. Special tokens are stripped
  everywhere: a model never writes them as an example.
- Cost is linear in the stream: openers are found with one compiled regex per registry,
  and the hold-back check only looks at the last (longest marker - 1) characters. Memory is
  bounded by the longest marker plus the 200-character preview of the first stripped span,
  whatever the input: spans are counted, never buffered or listed.

Deliberate choices a reader might want to "fix":
- Text on both sides of a stripped region is not re-joined and re-scanned. A marker that
  exists only once a stripped token is taken out (`<|tool_` + `<|tool_calls|>` +
  `call_start|>`) was never in the model's output, and catching it would need unbounded
  hold-back; it is shown as the text it is.
- Lone end markers are not stripped (contract G7), although vLLM's LFM2 parser strips
  orphan `<|tool_call_end|>`: a look-alike must never be eaten.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

PatternKind = Literal["span", "token", "to_end"]
PREVIEW_CHARS = 200
_NEVER = r"(?!)"  # a regex that matches nothing


@dataclass(frozen=True)
class Pattern:
    """One kind of scaffolding.

    `span`: `start` ... one of `ends` (shortest match). `token`: `start` alone. `to_end`:
    `start` and everything after it to the end of the stream. `special` says the markers
    are single special tokens in the model's vocabulary; plain-text markers are left alone
    inside fenced code blocks.
    """

    name: str
    kind: PatternKind
    start: str
    source: str
    ends: tuple[str, ...] = ()
    special: bool = True

    def __post_init__(self) -> None:
        if not self.start:
            raise ValueError(f"pattern {self.name!r}: empty start marker")
        if (self.kind == "span") != bool(self.ends) or any(not end for end in self.ends):
            raise ValueError(f"pattern {self.name!r}: a span needs end markers, others none")
        for a in self.ends:
            for b in self.ends:
                if a != b and a in b:  # "x" inside "axb": which ends the span depends on chunking
                    raise ValueError(f"pattern {self.name!r}: end {a!r} is inside {b!r}: ambiguous")


Registry = tuple[Pattern, ...]

DEFAULT_REGISTRY: Registry = (
    Pattern(
        "lfm2-tool-call",
        "span",
        "<|tool_call_start|>",
        ends=("<|tool_call_end|>",),
        source="LiquidAI LFM2 chat template; vllm vllm/tool_parsers/lfm2_tool_parser.py",
    ),
    Pattern(
        "tool-calls-token",
        "token",
        "<|tool_calls|>",
        source="LFM2-family standalone token seen in leaked answers (contract clause G6)",
    ),
    Pattern(
        "tool-call-token",
        "token",
        "<|tool_call|>",
        source="IBM Granite 3.0 / Phi-4-mini marker seen bare (vllm granite_tool_parser.py)",
    ),
)

_VLLM = "vllm vllm/tool_parsers/"

PROFILES: dict[str, Registry] = {
    "hermes": (
        Pattern(
            "hermes-tool-call",
            "span",
            "<tool_call>",
            ends=("</tool_call>",),
            special=False,
            source=f"{_VLLM}hermes_tool_parser.py (Hermes, Qwen2.5/3, Granite 4, GLM-4.5+)",
        ),
    ),
    "qwen3-coder": (
        Pattern(
            "qwen3-coder-function",
            "span",
            "<function=",
            ends=("</function>",),
            special=False,
            source=f"{_VLLM}qwen3coder_tool_parser.py (bare <function=NAME> without wrapper)",
        ),
    ),
    "mistral": (
        Pattern(
            "mistral-tool-calls",
            "to_end",
            "[TOOL_CALLS]",
            source=f"{_VLLM}mistral_tool_parser.py (no end marker; mlx-lm PR #1448)",
        ),
    ),
    "deepseek": (
        Pattern(
            "deepseek-tool-calls",
            "span",
            "<｜tool▁calls▁begin｜>",
            ends=("<｜tool▁calls▁end｜>",),
            source=f"{_VLLM}deepseekv3_tool_parser.py; google/adk-python PR #5654",
        ),
        Pattern(
            "deepseek-tool-call",
            "span",
            "<｜tool▁call▁begin｜>",
            ends=("<｜tool▁call▁end｜>",),
            source=f"{_VLLM}deepseekv31_tool_parser.py",
        ),
        Pattern(
            "deepseek-dsml-function-calls",
            "span",
            "<｜DSML｜function_calls>",
            ends=("</｜DSML｜function_calls>",),
            source=f"{_VLLM}deepseekv32_tool_parser.py",
        ),
        Pattern(
            "deepseek-dsml-tool-calls",
            "span",
            "<｜DSML｜tool_calls>",
            ends=("</｜DSML｜tool_calls>",),
            source="DeepSeek V4 DSML, per sglang #40236",
        ),
    ),
    "harmony": (
        Pattern(
            "harmony-commentary",
            "span",
            "<|channel|>commentary",
            ends=("<|call|>", "<|end|>"),
            source=f"{_VLLM}openai_tool_parser.py; TensorRT-LLM #9256; odysseus PR #4523",
        ),
    ),
    "llama": (
        Pattern(
            "llama3-python-tag",
            "span",
            "<|python_tag|>",
            ends=("<|eom_id|>", "<|eot_id|>"),
            source=f"{_VLLM}llama_tool_parser.py; exo PR #1588 (often EOS-terminated)",
        ),
        Pattern(
            "llama4-python",
            "span",
            "<|python_start|>",
            ends=("<|python_end|>",),
            source=f"{_VLLM}llama4_pythonic_tool_parser.py",
        ),
    ),
    "kimi": (
        Pattern(
            "kimi-tool-calls-section",
            "span",
            "<|tool_calls_section_begin|>",
            ends=("<|tool_calls_section_end|>",),
            source=f"{_VLLM}kimi_k2_tool_parser.py; MoonshotAI/Kimi-K2 #26",
        ),
        Pattern(
            "kimi-tool-call",
            "span",
            "<|tool_call_begin|>",
            ends=("<|tool_call_end|>",),
            source=f"{_VLLM}kimi_k2_tool_parser.py; vllm PR #31207",
        ),
    ),
    "minimax": (
        Pattern(
            "minimax-m2-tool-call",
            "span",
            "<minimax:tool_call>",
            ends=("</minimax:tool_call>",),
            source=f"{_VLLM}minimax_m2_tool_parser.py; earendil-works/pi #368",
        ),
        Pattern(
            "minimax-m1-tool-calls",
            "span",
            "<tool_calls>",
            ends=("</tool_calls>",),
            special=False,
            source=f"{_VLLM}minimax_tool_parser.py, jamba_tool_parser.py",
        ),
    ),
    "internlm": (
        Pattern(
            "internlm-action",
            "span",
            "<|action_start|>",
            ends=("<|action_end|>",),
            source=f"{_VLLM}internlm2_tool_parser.py",
        ),
    ),
    "cohere": (
        Pattern(
            "cohere-action",
            "span",
            "<|START_ACTION|>",
            ends=("<|END_ACTION|>",),
            source=f"{_VLLM}command_tool_parser.py",
        ),
    ),
    "gemma": (
        Pattern(
            "gemma4-tool-call",
            "span",
            "<|tool_call>",
            ends=("<tool_call|>",),
            source=f"{_VLLM}gemma4_tool_parser.py",
        ),
        Pattern(
            "functiongemma-call",
            "span",
            "<start_function_call>",
            ends=("<end_function_call>",),
            source="vllm .../functiongemma_tool_parser.py",
        ),
    ),
}


def registry_with(*profiles: str, base: Registry = DEFAULT_REGISTRY) -> Registry:
    """`base` plus the named profiles. A later pattern with the same opener replaces one."""
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        raise ValueError(f"unknown profile(s) {', '.join(unknown)}; known: {', '.join(PROFILES)}")
    by_start = {pattern.start: pattern for pattern in base}
    for name in profiles:
        by_start.update((pattern.start, pattern) for pattern in PROFILES[name])
    return tuple(by_start.values())


class _Matcher:
    """What a registry compiles to: one opener regex, the prefix sets for hold-back."""

    def __init__(self, registry: Registry) -> None:
        starts = [p.start for p in registry]
        if len(set(starts)) != len(starts):
            raise ValueError("two patterns share an opener")
        for a in starts:
            for b in starts:
                if a != b and a in b:  # a whole opener would be held inside another's prefix
                    how = "a prefix of" if b.startswith(a) else "inside"
                    raise ValueError(f"opener {a!r} is {how} {b!r}: ambiguous")
        self.by_start = {p.start: p for p in registry}
        self.longest = max(len(s) for s in starts)
        self.opener = re.compile("|".join(re.escape(s) for s in sorted(starts, key=len)[::-1]))
        firsts = sorted({s[0] for s in starts})
        self.first_char = firsts[0] if len(firsts) == 1 else None
        self.first = re.compile("[" + "".join(re.escape(c) for c in firsts) + "]")
        self.special_prefixes = _proper_prefixes(p.start for p in registry if p.special)
        self.plain_prefixes = _proper_prefixes(p.start for p in registry if not p.special)


def _proper_prefixes(markers: Iterable[str]) -> frozenset[str]:
    return frozenset(m[:i] for m in markers for i in range(1, len(m)))


@functools.lru_cache(maxsize=64)
def _matcher(registry: Registry) -> _Matcher:
    return _Matcher(registry)


SpanEnds = tuple[re.Pattern[str], int, frozenset[str], re.Pattern[str]]


@functools.lru_cache(maxsize=256)
def _ends(pattern: Pattern) -> SpanEnds:
    """A span's end-marker regex, longest end, end prefixes, and end first-character regex."""
    ends = sorted(pattern.ends, key=len)[::-1]
    regex = re.compile("|".join(re.escape(e) for e in ends) or _NEVER)
    longest = max((len(e) for e in ends), default=0)
    firsts = "".join(re.escape(c) for c in sorted({e[0] for e in ends}))
    return regex, longest, _proper_prefixes(ends), re.compile(f"[{firsts}]" if firsts else _NEVER)


_NO_ENDS: SpanEnds = (re.compile(_NEVER), 0, frozenset(), re.compile(_NEVER))


class _Fences:
    """Whether the text so far is inside a fenced code block (``` or ~~~ lines)."""

    __slots__ = ("char", "decided", "head", "open")

    def __init__(self) -> None:
        self.open = False
        self.char = ""
        self.head = ""
        self.decided = False

    def copy(self) -> _Fences:
        twin = _Fences()
        twin.open, twin.char, twin.head, twin.decided = (
            self.open,
            self.char,
            self.head,
            self.decided,
        )
        return twin

    def feed(self, text: str) -> None:
        lines = text.split("\n")
        for index, piece in enumerate(lines):
            if index:
                self.head, self.decided = "", False
            if not self.decided:
                self.head = (self.head + piece)[:8]
                self._decide(complete=index < len(lines) - 1)

    def _decide(self, complete: bool) -> None:
        body = self.head.lstrip(" ")
        if len(self.head) - len(body) > 3:
            self.decided = True
            return
        run = len(body) - len(body.lstrip(body[:1])) if body[:1] in ("`", "~") else 0
        if run >= 3:
            self.decided = True
            if not self.open:
                self.open, self.char = True, body[0]
            elif body[0] == self.char:
                self.open = False
        elif complete or len(body) > run:
            self.decided = True


class ScaffoldingFilter:
    """Incremental scaffolding stripper for one stream. Not reusable after flush()."""

    __slots__ = (
        "_clean",
        "_fast",
        "_fences",
        "_flushed",
        "_held",
        "_matcher",
        "_preview",
        "_span",
        "_span_ends",
        "first_span",
        "stripped_chars",
        "stripped_spans",
    )

    def __init__(self, registry: Registry = DEFAULT_REGISTRY) -> None:
        self._matcher = _matcher(registry)
        self._held = ""
        self._span: Pattern | None = None
        self._span_ends = _NO_ENDS
        self._preview = ""
        plain = any(not p.special for p in registry)  # even a 1-char one, with no prefix to hold
        self._fences = _Fences() if plain else None
        self._clean = True
        self._fast: str | None = None
        self._set_clean(True)
        self._flushed = False
        self.stripped_chars = 0  # characters taken out so far
        self.stripped_spans = 0  # spans and tokens taken out so far
        self.first_span = ""  # the first of them, cut to PREVIEW_CHARS characters

    @property
    def held(self) -> str:
        """The text held back right now (a possible marker prefix)."""
        return self._held

    def feed(self, chunk: str) -> str:
        """The part of the stream that is safe to show now, `chunk` included."""
        fast = self._fast
        if fast is not None and fast not in chunk:
            return chunk
        return self._feed(chunk)

    def _feed(self, chunk: str) -> str:
        """Cheaper paths first, then a full scan of the held text and the chunk."""
        if self._flushed:  # flush() turned the fast path off, so every feed gets here
            raise RuntimeError("ScaffoldingFilter.feed() after flush(): use a fresh filter")
        held = self._held
        if self._span is not None:
            if not held:
                if self._span_ends[3].search(chunk) is None:
                    self._strip(chunk)  # no end marker can start in it: all of it is span
                    return ""
            elif held + chunk in self._span_ends[2]:
                self._held = held + chunk  # still an end marker's prefix: hold it all
                return ""
        elif not held:
            if self._matcher.first.search(chunk) is None:
                self._feed_fences(chunk)
                return chunk
        elif held + chunk in self._matcher.special_prefixes:
            self._held = held + chunk  # still a special opener's prefix: hold it all
            return ""
        return self._scan(held + chunk)

    def _set_clean(self, clean: bool) -> None:
        """Outside any span with nothing held, a chunk with no opener's first character is
        returned as it is; with one first character and no fences, by a bare `in` test."""
        self._clean = clean
        single = self._matcher.first_char if self._fences is None else None
        self._fast = single if clean else None

    def flush(self) -> str:
        """At stream end: a held partial opener is text; an open span is stripped to the end.

        A second flush returns ''; a feed after flush is an error.
        """
        self._flushed = True
        held, self._held = self._held, ""
        self._set_clean(True)
        self._fast = None
        if self._span is not None:
            self._strip(held)
            self._close_span()
            return ""
        if self._fences is not None:
            self._fences.feed(held)
        return held

    # --- scanning ------------------------------------------------------------------------

    def _scan(self, text: str) -> str:
        out: list[str] = []
        pos = 0
        while True:
            if self._span is None:
                match = self._matcher.opener.search(text, pos)
                if match is None:
                    break
                pattern = self._matcher.by_start[match.group()]
                before = text[pos : match.start()]
                out.append(before)
                self._feed_fences(before)
                pos = match.end()
                if self._fences is not None and self._fences.open and not pattern.special:
                    # A plain marker in a code block is an example: text, scanned on from its
                    # second character, so a special token overlapping its tail is still found.
                    pos = match.start() + 1
                    out.append(text[match.start()])
                    self._fences.feed(text[match.start()])
                    continue
                self._open(pattern, match.group())
            else:
                match = self._span_ends[0].search(text, pos)
                if match is None:
                    break
                self._strip(text[pos : match.end()])
                pos = match.end()
                self._close_span()
        if self._span is None:
            keep = self._hold_outside(text, pos)
            out.append(text[pos:keep])
            self._feed_fences(text[pos:keep])
        else:
            keep = self._hold_inside(text, pos)
            self._strip(text[pos:keep])
        self._held = text[keep:]
        self._set_clean(self._span is None and not self._held)
        return "".join(out)

    def _feed_fences(self, text: str) -> None:
        if self._fences is not None:
            self._fences.feed(text)

    def _hold_outside(self, text: str, pos: int) -> int:
        """Where the held-back suffix starts: the longest one that is an opener's prefix."""
        matcher = self._matcher
        window = max(pos, len(text) - matcher.longest + 1)
        for candidate in matcher.first.finditer(text, window):
            index = candidate.start()
            suffix = text[index:]
            if suffix in matcher.special_prefixes:
                return index
            if suffix in matcher.plain_prefixes and not self._fenced_at(text, pos, index):
                return index
        return len(text)

    def _fenced_at(self, text: str, pos: int, index: int) -> bool:
        if self._fences is None:
            return False
        probe = self._fences.copy()
        probe.feed(text[pos:index])
        return probe.open

    def _hold_inside(self, text: str, pos: int) -> int:
        """Where the held-back suffix starts inside a span: a prefix of one of its ends."""
        _, longest, prefixes, firsts = self._span_ends
        for candidate in firsts.finditer(text, max(pos, len(text) - longest + 1)):
            if text[candidate.start() :] in prefixes:
                return candidate.start()
        return len(text)

    # --- bookkeeping ---------------------------------------------------------------------

    def _open(self, pattern: Pattern, marker: str) -> None:
        self._strip(marker)
        if pattern.kind == "token":
            self._close_span()
        else:
            self._span = pattern
            self._span_ends = _ends(pattern)

    def _strip(self, text: str) -> None:
        self.stripped_chars += len(text)
        if self.stripped_spans == 0:  # only the first span's preview is ever kept
            room = PREVIEW_CHARS - len(self._preview)
            if room > 0:
                self._preview += text[:room]

    def _close_span(self) -> None:
        if self.stripped_spans == 0:
            self.first_span = self._preview
            self._preview = ""
        self.stripped_spans += 1
        self._span = None
