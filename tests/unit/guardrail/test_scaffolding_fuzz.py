"""The filter under fuzz: long stateful runs over random registries and chunkings.

A hypothesis state machine draws a registry (built-in profiles, random markers with
overlapping prefixes, or both), feeds one filter chunk by chunk (prose, whole and split
markers, nested and unterminated spans, lone closers, look-alikes, code fences), flushes,
starts the next stream, and after every step checks the filter against `reference()`, a
plain non-streaming reading of the contract (docs/contract.md, "The rules"):

- what has been shown plus what is held equals the reference of everything fed so far
  (or, inside a span, what has been shown does), so output is never retracted and
  flushing at any point gives the whole text's result;
- nothing shown could still become markup: every way the fed text's tail could complete
  an opener leaves the shown text a prefix of that stream's reference;
- the hold-back is minimal: held text could become a marker that is stripped whole, is
  the longest end-marker prefix inside a span, and is shorter than the longest marker;
- counts (stripped characters, spans, the first span's preview) match the reference;
  a second flush returns '' and a feed after flush is an error.

Example counts: an example here is a run of hypothesis's 50 steps, each checked whole, so
the machine runs a tenth of the profile's number of examples (RUN_SHARE; 10 runs under `ci`,
about a second, derandomized, so no run can turn red on an example an earlier run did not
try). The gate needs the property, not the volume. For a long run, set SG_FUZZ_EXAMPLES=N: N
runs of LONG_RUN_STEPS steps each, with no per-test timeout:

    SG_FUZZ_EXAMPLES=5000 SG_HYPOTHESIS_PROFILE=dev \
        uv run pytest tests/unit/guardrail/test_scaffolding_fuzz.py --hypothesis-show-statistics

A failure prints the fixture of the failing stream (its registry and chunks) as a note:
save it under tests/fixtures/filter_fuzz/ (see the README there), where the replay tests
below keep it for good.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, currently_in_test_context, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from guardrail.patterns import TRAILER_SPACE, Pattern, PatternKind, Registry
from guardrail.registries import JSON_BODY, PROFILES, registry_with
from guardrail.scaffolding import PREVIEW_CHARS, ScaffoldingFilter
from guardrail.shapes import NAME, Alt, Chars, Lit, Seq, Shape, alt, compiled, seq

from ..helpers.scaffolding import run

FUZZ_ENV = "SG_FUZZ_EXAMPLES"
LONG_RUN_STEPS = 100  # steps per run when FUZZ_ENV asks for a long run
RUN_SHARE = 10
"""The profile's examples per run of the machine: a run is 50 steps, each checked against the
whole-text reference, so it costs what dozens of a plain property's examples do."""
MAX_STREAM = 400  # a stream this long is flushed before the next feed: checks re-read it whole
FIXTURES = Path(__file__).parents[2] / "fixtures" / "filter_fuzz"


# --- the reference: the contract read over the whole text at once ------------------------

FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")


def in_code_block(shown: str) -> bool:
    """Whether `shown` ends inside code: in an inline code span on its last line, or in a
    fenced code block, as CommonMark has it: a line that starts (after at most three
    spaces) with three or more backticks or tildes opens one, and a later line of the same
    character, its run at least as long and nothing but blanks after it, closes it. A last,
    unfinished line counts once its run is there; one that may still close the block
    (nothing after its run yet) leaves it open."""
    opened, width = "", 0
    lines = shown.split("\n")
    for index, line in enumerate(lines):
        fence = FENCE_LINE.match(line)
        if fence is None:
            continue
        run = fence.group(1)
        if not opened:
            opened, width = run[0], len(run)
        elif (
            run[0] == opened
            and len(run) >= width
            and not line[fence.end() :].strip(" \t")
            and index < len(lines) - 1
        ):
            opened = ""
    last = lines[-1]
    return bool(opened) or (FENCE_LINE.match(last) is None and inline_code_open(last))


def inline_code_open(line: str) -> bool:
    """Whether `line` (not a fence line) ends inside an inline code span: a run of backticks
    opens one, the next run of the same length closes it."""
    opened = 0
    for ticks in re.findall("`+", line):
        if not opened:
            opened = len(ticks)
        elif len(ticks) == opened:
            opened = 0
    return opened > 0


@dataclass
class Reading:
    """What the contract says of a whole text: what is shown, each stripped region, and the
    span (or span to the end) the text ends inside, with its text after the opener (for a
    braced body: after the last brace or quote read)."""

    shown: str
    stripped: list[str]
    open_span: Pattern | None = None
    body: str = ""
    closed: tuple[Pattern, int] | None = None  # the last span closed, and where it ended


def reference(text: str, registry: Registry) -> Reading:
    """The leftmost opener that is live (where its boundary allows, special or plain outside
    a code block, followed by its hint, or cut off: on a line of its own at the text's end
    with only blanks after it that its hint could still begin with) starts scaffolding; a
    span ends at its first end marker after the opener (at a tie, the shorter: shortest
    match; a JSON body's end marker outside its strings), then takes a trailer that follows
    it; a braced body ends at the brace that closes its first `{`, a json_value body where
    its first object or list closes; else the
    scaffolding runs to the end of the text."""
    shown, stripped, at = "", [], 0
    closed: tuple[Pattern, int] | None = None
    while (hit := _next_opener(text, at, registry, shown)) is not None:
        start, pattern = hit
        shown += text[at:start]
        after = start + len(pattern.start)
        if pattern.kind == "token":
            stripped.append(pattern.start)
            at = after
            continue
        if pattern.kind == "braced" or pattern.quotes:
            found = braced_end if pattern.kind == "braced" else quoted_span_end
            end, read = found(text, after, pattern)
            if end is None:
                stripped.append(text[start:])
                return Reading(shown, stripped, pattern, text[read:])
            at = end if pattern.kind == "braced" else trailed(pattern, text, end)
            if pattern.kind != "braced":
                closed = (pattern, at)
        elif json_body(text, after, pattern):
            end, read = json_end(text, after, pattern)
            if end is None:
                stripped.append(text[start:])
                return Reading(shown, stripped, pattern, text[read:])
            at = trailed(pattern, text, end)
            closed = (pattern, at)
        else:
            ends = sorted(
                (found, len(e)) for e in pattern.ends if (found := text.find(e, after)) >= 0
            )
            if not ends:
                stripped.append(text[start:])
                return Reading(shown, stripped, pattern, text[after:])
            at = trailed(pattern, text, ends[0][0] + ends[0][1])
            closed = (pattern, at)
        stripped.append(text[start:at])
    return Reading(shown + text[at:], stripped, closed=closed)


def trailed(pattern: Pattern, text: str, end: int) -> int:
    """Where scaffolding that ended at `end` stops: past a trailer that follows it."""
    if not pattern.trailers:
        return end
    return max(shape_ends(trailer_shape(pattern), text, end), default=end)


def is_word(char: str) -> bool:
    return re.match(r"\w", char) is not None


def _next_opener(text: str, at: int, registry: Registry, shown: str) -> tuple[int, Pattern] | None:
    search = at
    while True:
        hits = [(found, p) for p in registry if (found := text.find(p.start, search)) >= 0]
        if not hits:
            return None
        start, pattern = min(hits, key=lambda hit: hit[0])
        if (
            (pattern.special or not in_code_block(shown + text[at:start]))
            and (pattern.boundary != "word" or start == 0 or not is_word(text[start - 1]))
            and (pattern.boundary != "start" or start == 0)
            and (
                pattern.hint is None
                or shape_ends(pattern.hint, text, start + len(pattern.start))
                or cut_off(text, start, pattern)
            )
        ):
            return start, pattern
        search = start + 1  # a dead opener is text


def cut_off(text: str, start: int, pattern: Pattern) -> bool:
    """A call the text's end cut off: a tag-like opener (not a token, any boundary) at the
    text's start, a line's start or glued to a sentence's end, followed by what its hint
    could still begin with (G8)."""
    after = start + len(pattern.start)
    return (
        pattern.kind != "token"
        and pattern.boundary == "any"
        and pattern.hint is not None
        and compiled(pattern.hint).viable.fullmatch(text, after) is not None
        and (start == 0 or text[start - 1] in "\n.!?:")
    )


def json_body(text: str, after: int, pattern: Pattern) -> bool:
    """Whether the body after `after` is read as JSON: a json_value body, `always`, and
    `leading` unless its first non-blank character is other than `{` or `[`."""
    if pattern.kind == "json_value" or pattern.json_strings == "always":
        return True
    first = text[after:].lstrip(" \t\r\n")[:1]
    return pattern.json_strings == "leading" and first in ("", "{", "[")


def json_end(text: str, after: int, pattern: Pattern) -> tuple[int | None, int]:
    """Where a JSON body from `after` ends (after an end marker outside a string; a
    json_value body after the close of its first object or list), or None; and where its
    last token was read: outside a string, nothing from the earliest tail that may begin an
    end marker or a skip is read (it is read whole with what comes next)."""
    words = sorted((*pattern.ends, *pattern.skips), key=len, reverse=True)

    def hold_from(at: int) -> int:
        tails = (
            k
            for k in range(at, len(text))
            if any(w.startswith(text[k:]) and w != text[k:] for w in words)
        )
        return next(tails, len(text))

    depth, i, read, hold = 0, after, after, hold_from(after)
    while i < len(text):
        if i >= hold:
            return None, hold  # a split end marker or skip may begin there
        word = next((w for w in words if text.startswith(w, i)), None)
        if word is not None:
            i = read = i + len(word)
            if word in pattern.ends:
                return i, i
            continue
        char = text[i]
        if char not in '{}[]"\\':
            i += 1
            continue
        if char in "{[":
            depth += 1
        elif char in "}]" and depth:
            depth -= 1
            if not depth and pattern.kind == "json_value":
                return i + 1, i + 1
        elif char == '"' and depth:
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            if i >= len(text):
                return None, len(text)
            if i + 1 > hold:  # the string ran past what looked like a marker's start
                hold = hold_from(i + 1)
        i = read = i + 1
    return None, read


def outside_quotes(text: str, at: int, quotes: tuple[str, ...]) -> Iterator[tuple[int, int]]:
    """Each index of `text` from `at` that is outside the format's quotes (inside one, only
    the same quote ends it), with where the last quote read so far ends; then `len(text)`."""
    longest_first = sorted(quotes, key=len, reverse=True)
    quote, read, i = "", at, at
    while i < len(text):
        if quote:
            if text.startswith(quote, i):
                i, quote, read = i + len(quote), "", i + len(quote)
            else:
                i += 1
            continue
        opened = next((q for q in longest_first if text.startswith(q, i)), None)
        if opened is not None:
            i, quote, read = i + len(opened), opened, i + len(opened)
            continue
        yield i, read
        i += 1
    yield len(text), read


def quoted_span_end(text: str, at: int, pattern: Pattern) -> tuple[int | None, int]:
    """Where a span whose format quotes its strings ends (after its first end marker
    outside two of its quotes), or None; and where its last quote was read."""
    for i, read in outside_quotes(text, at, pattern.quotes):
        ended = next((e for e in pattern.ends if text.startswith(e, i)), None)
        if ended is not None:
            return i + len(ended), i + len(ended)
        if i == len(text):
            return None, read
    raise AssertionError("outside_quotes ends with len(text)")


def braced_end(text: str, at: int, pattern: Pattern) -> tuple[int | None, int]:
    """Where a braced body starting at `at` ends (after the brace that closes its first
    `{`), or None; and where its last brace or quote was read."""
    depth, brace_read = 0, at
    for i, read in outside_quotes(text, at, pattern.quotes):
        if i == len(text):
            return None, max(read, brace_read)
        if text[i] in "{}":
            brace_read = i + 1
        if text[i] == "{":
            depth += 1
        elif text[i] == "}" and depth:
            depth -= 1
            if not depth:
                return i + 1, i + 1
    raise AssertionError("outside_quotes ends with len(text)")


def longest_end_prefix(body: str, ends: tuple[str, ...]) -> str:
    """The longest tail of a span's body that is a proper prefix of one of its ends."""
    tails = [e[:k] for e in ends for k in range(1, len(e)) if body.endswith(e[:k])]
    return max(tails, key=len, default="")


# --- shapes, read by their grammar (independent of guardrail/shapes.py's regexes) -----------


def trailer_shape(pattern: Pattern) -> Shape:
    return seq(Chars(r"[ \t\r\n]", 0, TRAILER_SPACE), alt(*(Lit(t) for t in pattern.trailers)))


def _parts(shape: Shape) -> tuple[Shape, ...]:
    return shape.parts if isinstance(shape, Seq) else (shape,)


def shape_ends(shape: Shape, text: str, at: int) -> set[int]:
    """Every position j such that text[at:j] is the whole shape."""
    if isinstance(shape, Lit):
        return {at + len(shape.text)} if text.startswith(shape.text, at) else set()
    if isinstance(shape, Chars):
        run = 0
        while run < shape.most and at + run < len(text) and re.fullmatch(shape.cls, text[at + run]):
            run += 1
        return {at + k for k in range(shape.least, run + 1)}
    if isinstance(shape, Alt):
        return set().union(*(shape_ends(o, text, at) for o in shape.options))
    positions = {at}
    for part in shape.parts:
        positions = set().union(*(shape_ends(part, text, p) for p in positions))
    return positions


SAMPLE_CHARS = "aA_0 {}<>[]\n"


def sample(cls: str) -> str:
    """A character of the regex class `cls`."""
    return next(c for c in SAMPLE_CHARS if re.fullmatch(cls, c))


def longest_text(shape: Shape) -> int:
    if isinstance(shape, Lit):
        return len(shape.text)
    if isinstance(shape, Chars):
        return shape.most
    if isinstance(shape, Seq):
        return sum(longest_text(p) for p in shape.parts)
    return max(longest_text(o) for o in shape.options)


def shortest(parts: tuple[Shape, ...]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, Lit):
            out += part.text
        elif isinstance(part, Chars):
            out += sample(part.cls) * part.least
        elif isinstance(part, Seq):
            out += shortest(part.parts)
        else:
            out += min((shortest(_parts(o)) for o in part.options), key=len)
    return out


def completions(parts: tuple[Shape, ...], text: str, at: int = 0) -> set[str]:
    """Texts c such that text[at:] + c is the whole of `parts` (the shortest ways)."""
    if not parts:
        return {""} if at == len(text) else set()
    first, rest = parts[0], parts[1:]
    if isinstance(first, Seq | Alt):
        options = first.options if isinstance(first, Alt) else (first,)
        return set().union(*(completions((*_parts(o), *rest), text, at) for o in options))
    if isinstance(first, Lit):
        tail = text[at:]
        if tail.startswith(first.text):
            return completions(rest, text, at + len(first.text))
        return {first.text[len(tail) :] + shortest(rest)} if first.text.startswith(tail) else set()
    found: set[str] = set()
    for end in sorted(shape_ends(Chars(first.cls, 0, first.most), text, at)):
        if end == len(text):
            more = max(0, first.least - (end - at))
            found.add(sample(first.cls) * more + shortest(rest))
        elif end - at >= first.least:
            found |= completions(rest, text, end)
    return found


# --- registries: what a fixture and a state machine run name --------------------------------


HINTS: dict[str, Shape] = {"json": JSON_BODY, "name>": seq(NAME, Lit(">"))}
"""The hints a random pattern may carry, by the name a fixture file gives them."""


@dataclass(frozen=True)
class RegistrySpec:
    """`profiles` (None: none, not even the default) plus extra `patterns`, in that order."""

    profiles: tuple[str, ...] | None = ()
    patterns: tuple[Pattern, ...] = ()

    def build(self) -> Registry:
        """The registry, without the spans whose body is reasoning (Kimi K3's thinking),
        which route text instead of stripping it, as FUZZED_PROFILES leaves out harmony's:
        their property is test_scaffolding_properties.py's (nothing lost at any chunking)."""
        base = () if self.profiles is None else registry_with(*self.profiles)
        return (*(p for p in base if not p.reasoning), *self.patterns)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.profiles is not None:
            data["profiles"] = list(self.profiles)
        if self.patterns:
            data["patterns"] = [_pattern_json(p) for p in self.patterns]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RegistrySpec:
        profiles = data.get("profiles")
        patterns = tuple(
            Pattern(
                f"fixture-{i}",
                p["kind"],
                p["start"],
                ends=tuple(p.get("ends", ())),
                special=p.get("special", True),
                hint=HINTS[p["hint"]] if "hint" in p else None,
                boundary=p.get("boundary", "any"),
                trailers=tuple(p.get("trailers", ())),
                quotes=tuple(p.get("quotes", ())),
                source="tests/fixtures/filter_fuzz",
            )
            for i, p in enumerate(data.get("patterns", ()))
        )
        return cls(None if profiles is None else tuple(profiles), patterns)


def _pattern_json(p: Pattern) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": p.kind, "start": p.start, "ends": list(p.ends)}
    data["special"] = p.special
    if p.hint is not None:
        data["hint"] = next(name for name, hint in HINTS.items() if hint == p.hint)
    if p.boundary != "any":
        data["boundary"] = p.boundary
    if p.trailers:
        data["trailers"] = list(p.trailers)
    if p.quotes:
        data["quotes"] = list(p.quotes)
    return data


# Few characters, so that random markers overlap, share prefixes and meet code fences.
MARKER_CHARS = "<|>/ab`~\n é｜"
markers = st.text(MARKER_CHARS, min_size=1, max_size=7)
KINDS: list[PatternKind] = ["span", "span", "token", "to_end", "braced"]  # spans twice: they nest


@st.composite
def random_pattern(draw: st.DrawFn, index: int) -> Pattern | None:
    kind = draw(st.sampled_from(KINDS))
    ends = draw(st.lists(markers, min_size=1, max_size=2, unique=True)) if kind == "span" else []
    trailers = draw(st.lists(markers, max_size=1)) if kind == "span" else []
    quotes = []
    if kind in ("braced", "span"):
        quotes = draw(st.lists(markers, max_size=2 if kind == "braced" else 1, unique=True))
    hint = draw(st.sampled_from([None, None, *HINTS]))
    try:
        return Pattern(
            f"fuzz-{index}", kind, draw(markers), ends=tuple(ends),
            special=draw(st.booleans()), hint=HINTS[hint] if hint else None,
            boundary=draw(st.sampled_from(["any", "any", "word", "start"])),
            trailers=tuple(trailers), quotes=tuple(quotes), source="fuzz",
        )  # fmt: skip
    except ValueError:  # refused by the registry API: not a registry anyone can build
        return None


def accepted(registry: Registry) -> bool:
    try:
        ScaffoldingFilter(registry)
    except ValueError:
        return False
    return True


FUZZED_PROFILES = sorted(
    p for p in PROFILES if p not in ("llama-json", "llama-pythonic", "harmony", "harmony-residue")
)
"""Every profile but the whole-reply ones, which hold a reply far past the markers' bound
while it may be nothing but calls (their properties are tests/unit/guardrail/
test_json_reply.py's and test_pythonic_reply.py's),
and harmony's messages and residue, which route text to the reasoning instead of stripping
it (their properties are tests/unit/guardrail/test_harmony.py's and
test_scaffolding_shapes.py's)."""


@st.composite
def registry_specs(draw: st.DrawFn) -> RegistrySpec:
    """Built-in profiles, random patterns, or random patterns on top of profiles; each
    random pattern is kept only if the registry API accepts the registry with it."""
    choice = draw(st.sampled_from(["builtin", "random", "mixed"]))
    profiles = None
    if choice != "random":
        profiles = tuple(draw(st.lists(st.sampled_from(FUZZED_PROFILES), max_size=3, unique=True)))
    spec = RegistrySpec(profiles)
    if choice != "builtin":
        for index in range(draw(st.integers(1, 4))):
            pattern = draw(random_pattern(index))
            grown = RegistrySpec(profiles, (*spec.patterns, pattern)) if pattern else spec
            if accepted(grown.build()):
                spec = grown
    assume(spec.build())
    return spec


def markers_of(registry: Registry) -> list[str]:
    return sorted(
        {p.start for p in registry}
        | {m for p in registry for m in (*p.ends, *p.trailers, *p.quotes, *p.skips)}
    )


def chunks_for(registry: Registry) -> st.SearchStrategy[str]:
    """Chunks that make markup likely: whole markers (openers, lone closers), spans, split
    markers, one-character-off look-alikes, fences, what hints look for, prose and any
    text."""
    marks = markers_of(registry)
    spans = [p for p in registry if p.kind == "span"]
    chars = "".join(sorted(set("".join(marks)))) + 'xy \n{}[A"\\'  # JSON strings too
    prose = st.text(chars, max_size=6)
    mark = st.sampled_from(marks)
    cut = st.tuples(mark, st.integers(1, 30)).map(lambda m: (m[0], m[1] % len(m[0])))
    parts = [
        mark,
        cut.map(lambda c: c[0][: c[1]]),  # a marker's head (a partial opener, at stream end)
        cut.map(lambda c: c[0][c[1] :]),  # its tail
        st.tuples(cut, st.sampled_from(chars)).map(  # one character off: a look-alike
            lambda c: c[0][0][: c[0][1]] + c[1] + c[0][0][c[0][1] + 1 :]
        ),
        prose,
        st.sampled_from(["```\n", "~~~\n", "\n", "  ```", "`", "```x\n"]),
        st.sampled_from(["{", "}", "[", "f>", "f{x", "f[ARGS]", "We", "f(", "k</arg_key>"]),
        st.sampled_from(['{"k": "', '"}', '\\"', "\\", "f[CALL_ID]1[ARGS]", "]"]),
        st.text(max_size=4),
    ]
    if spans:
        parts.append(  # a whole span, maybe with an opener nested in its body
            st.tuples(st.sampled_from(spans), prose, st.sampled_from(["", *marks])).map(
                lambda s: s[0].start + s[2] + s[1] + s[0].ends[0]
            )
        )
    return st.lists(st.one_of(parts), max_size=4).map("".join)


# --- one stream, checked after every step --------------------------------------------------


@dataclass
class CheckedStream:
    """One filter fed chunk by chunk, held to the reference after every feed and at flush."""

    spec: RegistrySpec
    registry: Registry = field(init=False)
    chunks: list[str] = field(default_factory=list)
    fed: str = ""
    shown: str = ""
    failed: bool = False

    def __post_init__(self) -> None:
        self.registry = self.spec.build()
        self.filter = ScaffoldingFilter(self.registry)
        self.bound = max(
            [len(m) - 1 for m in markers_of(self.registry)]
            + [len(p.start) + longest_text(p.hint) for p in self.registry if p.hint is not None]
            + [TRAILER_SPACE + len(t) - 1 for p in self.registry for t in p.trailers]
        )

    def strips_whole(self, rest: str) -> bool:
        """Whether the held text's first character is stripped once `rest` follows: what is
        shown then is what is shown now and a tail of the held text and `rest` (a token's
        hint is shown after it), never all of them; or what is shown next does not begin
        with that character (a hint's own end may open another span and go too)."""
        later = reference(self.fed + rest, self.registry).shown
        added, coming = later[len(self.shown) :], self.filter.held + rest
        tail = coming.endswith(added) and added != coming
        return later.startswith(self.shown) and (tail or added[:1] != coming[:1])

    def rests(self, tail: str) -> set[str]:
        """What completes `tail` into something stripped whole: an opener (with its hint), or
        the trailer of a span."""
        found: set[str] = set()
        for p in self.registry:
            hint = _parts(p.hint) if p.hint is not None else ()
            if len(tail) < len(p.start) and p.start.startswith(tail):
                found.add(p.start[len(tail) :] + shortest(hint))
            elif tail.startswith(p.start) and hint:
                found |= completions(hint, tail, len(p.start))
            if p.trailers:
                found |= completions(_parts(trailer_shape(p)), tail) - {""}
        return found

    def awaiting_trailer(self) -> bool:
        """Whether the held text follows a span's end right away and could still grow into
        one of its trailers."""
        held = self.filter.held
        cut = len(self.fed) - len(held)
        before = reference(self.fed[:cut], self.registry)
        if not held or before.open_span is not None or before.closed is None:
            return False
        pattern, end = before.closed
        if end != cut or not pattern.trailers:
            return False
        return bool(completions(_parts(trailer_shape(pattern)), held) - {""})

    def awaiting_hint(self) -> bool:
        """Whether the held text is an opener whose hint is not decided yet."""
        held = self.filter.held
        return any(
            p.hint is not None
            and held.startswith(p.start)
            and bool(completions(_parts(p.hint), held, len(p.start)) - {""})
            for p in self.registry
        )

    def feed(self, chunk: str) -> None:
        self.chunks.append(chunk)
        self.fed += chunk
        self.shown += self.filter.feed(chunk)
        self._explained(self._check_open)

    def flush(self) -> None:
        self.shown += self.filter.flush()
        if not self.failed:  # after a failed check, only the first failure is news
            self._explained(self._check_flushed)

    def fixture(self, about: str) -> dict[str, Any]:
        whole = reference(self.fed, self.registry)
        return {
            "about": about,
            "registry": self.spec.to_json(),
            "chunks": self.chunks,
            "shown": whole.shown,
            "stripped_chars": sum(map(len, whole.stripped)),
            "stripped_spans": len(whole.stripped),
        }

    def _explained(self, check: Callable[[], None]) -> None:
        try:
            check()
        except AssertionError as failure:
            self.failed = True
            if not currently_in_test_context():
                raise
            fixture = self.fixture(about=str(failure).split("\n")[0])
            note("fixture for tests/fixtures/filter_fuzz/:")
            note(json.dumps(fixture, ensure_ascii=False, indent=2))
            raise

    def _check_open(self) -> None:
        f, held = self.filter, self.filter.held
        whole = reference(self.fed, self.registry)
        total = sum(map(len, whole.stripped))
        assert len(held) <= self.bound, "held back more than the longest marker and hint"
        if self.awaiting_trailer() or self.awaiting_hint():
            # Held while a trailer or an opener's hint may still follow: the whole text read
            # now may open a span inside the held text, which the next characters can undo.
            assert whole.shown.startswith(self.shown), "shown text is not the whole text's"
        elif whole.open_span is None:
            assert self.shown + held == whole.shown, "shown + held is not the whole text's result"
            assert (f.stripped_chars, f.stripped_spans) == (total, len(whole.stripped))
            assert not held or any(self.strips_whole(rest) for rest in self.rests(held)), (
                f"held {held!r}, which no opener's completion strips whole"
            )
        else:
            assert self.shown == whole.shown, "shown text differs from the whole text's result"
            assert (f.stripped_chars + len(held), f.stripped_spans + 1) == (
                total,
                len(whole.stripped),
            )
            span = whole.open_span
            closers = (*span.ends, *span.skips, *span.quotes)
            if span.kind == "braced":
                closers = span.quotes
            assert held == longest_end_prefix(whole.body, closers), f"inside a span, held {held!r}"
        if f.stripped_spans:
            assert f.first_span == whole.stripped[0][:PREVIEW_CHARS]
        for k in range(1, min(len(self.fed), self.bound) + 1):
            for rest in self.rests(self.fed[-k:]):
                later = reference(self.fed + rest, self.registry).shown
                assert later.startswith(self.shown), f"shown text became {self.fed[-k:] + rest!r}"

    def _check_flushed(self) -> None:
        f = self.filter
        whole = reference(self.fed, self.registry)
        assert self.shown == whole.shown, "the flushed stream differs from the whole text's result"
        assert f.held == ""
        assert (f.stripped_chars, f.stripped_spans) == (
            sum(map(len, whole.stripped)),
            len(whole.stripped),
        )
        assert f.first_span == (whole.stripped[0][:PREVIEW_CHARS] if whole.stripped else "")
        assert f.flush() == ""
        with pytest.raises(RuntimeError, match="after flush"):
            f.feed("x")


# --- the state machine ---------------------------------------------------------------------


class FilterFuzz(RuleBasedStateMachine):
    """Streams over one random registry: feed chunks, sometimes one character at a time,
    flush, and start the next stream."""

    stream: CheckedStream
    chunks: st.SearchStrategy[str]

    @initialize(spec=registry_specs())
    def choose_registry(self, spec: RegistrySpec) -> None:
        self.stream = CheckedStream(spec)
        self.chunks = chunks_for(self.stream.registry)

    def current(self) -> CheckedStream:
        """The stream to feed; one as long as MAX_STREAM is flushed and replaced first."""
        if len(self.stream.fed) >= MAX_STREAM:
            self.flush_and_start_the_next_stream()
        return self.stream

    @rule(data=st.data())
    def feed(self, data: st.DataObject) -> None:
        self.current().feed(data.draw(self.chunks, label="chunk"))

    @rule(data=st.data())
    def feed_one_character_at_a_time(self, data: st.DataObject) -> None:
        stream = self.current()
        for char in data.draw(self.chunks, label="characters"):
            stream.feed(char)

    @rule()
    def feed_nothing(self) -> None:
        self.stream.feed("")

    @rule()
    def flush_and_start_the_next_stream(self) -> None:
        self.stream.flush()
        self.stream = CheckedStream(self.stream.spec)

    def teardown(self) -> None:
        if hasattr(self, "stream"):
            self.stream.flush()


def fuzz_settings(environ: Mapping[str, str]) -> settings:
    """A RUN_SHARE-th of the profile's examples, or for FUZZ_ENV=N, N runs of LONG_RUN_STEPS
    steps."""
    raw = environ.get(FUZZ_ENV, "")
    if not raw:
        return settings(max_examples=max(1, settings().max_examples // RUN_SHARE))
    if not raw.isdigit() or int(raw) < 1:
        raise pytest.UsageError(f"{FUZZ_ENV}={raw!r}: a positive number of runs")
    return settings(max_examples=int(raw), stateful_step_count=LONG_RUN_STEPS)


TestStreamingAgreesWithTheWholeTextReference = FilterFuzz.TestCase
TestStreamingAgreesWithTheWholeTextReference.settings = fuzz_settings(os.environ)
if os.environ.get(FUZZ_ENV):  # a long run takes as long as it was asked to
    pytest.mark.timeout(0)(TestStreamingAgreesWithTheWholeTextReference)


# --- fixtures: cases kept for good ---------------------------------------------------------


def fixtures(*, refused: bool) -> list[Any]:
    """The fixtures whose registry the API refuses, or those that are streams; ids are
    their file names."""
    cases = [(p.stem, json.loads(p.read_text(encoding="utf-8"))) for p in FIXTURES.glob("*.json")]
    return [pytest.param(c, id=name) for name, c in sorted(cases) if ("refused" in c) == refused]


@pytest.mark.parametrize("case", fixtures(refused=False))
def test_fixture_gives_its_recorded_output_and_counts(case: dict[str, Any]):
    shown, f = run(case["chunks"], RegistrySpec.from_json(case["registry"]).build())
    assert shown == case["shown"]
    assert (f.stripped_chars, f.stripped_spans) == (case["stripped_chars"], case["stripped_spans"])


@pytest.mark.parametrize("case", fixtures(refused=False))
def test_fixture_streams_within_the_contract_at_every_chunk(case: dict[str, Any]):
    stream = CheckedStream(RegistrySpec.from_json(case["registry"]))
    for chunk in case["chunks"]:
        stream.feed(chunk)
    stream.flush()


@pytest.mark.parametrize("case", fixtures(refused=True))
def test_fixture_registry_is_refused_as_ambiguous(case: dict[str, Any]):
    with pytest.raises(ValueError, match=case["refused"]):
        ScaffoldingFilter(RegistrySpec.from_json(case["registry"]).build())


def test_fuzz_examples_variable_raises_runs_and_steps():
    long_run = fuzz_settings({FUZZ_ENV: "5000"})
    assert (long_run.max_examples, long_run.stateful_step_count) == (5000, LONG_RUN_STEPS)


def test_without_the_variable_the_profile_decides_the_counts():
    assert fuzz_settings({}).max_examples == settings().max_examples // RUN_SHARE
    assert fuzz_settings({}).stateful_step_count == settings().stateful_step_count


def test_fuzz_examples_variable_must_be_a_positive_number():
    with pytest.raises(pytest.UsageError, match=FUZZ_ENV):
        fuzz_settings({FUZZ_ENV: "lots"})
