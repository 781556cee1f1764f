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

Example counts: the machine runs the profile's number of examples (runs of hypothesis's
50 steps; a few seconds in CI, derandomized under the `ci` profile, so no run can turn red on
an example an earlier run did not try). For a long run, set SG_FUZZ_EXAMPLES=N: N runs of
LONG_RUN_STEPS steps each, with no per-test timeout:

    SG_FUZZ_EXAMPLES=5000 SG_HYPOTHESIS_PROFILE=dev \
        uv run pytest tests/unit/test_scaffolding_fuzz.py --hypothesis-show-statistics

A failure prints the fixture of the failing stream (its registry and chunks) as a note:
save it under tests/fixtures/filter_fuzz/ (see the README there), where the replay tests
below keep it for good.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, currently_in_test_context, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from guardrail.scaffolding import (
    PREVIEW_CHARS,
    PROFILES,
    Pattern,
    PatternKind,
    Registry,
    ScaffoldingFilter,
    registry_with,
)

from .scaffolding_helpers import run

FUZZ_ENV = "SG_FUZZ_EXAMPLES"
LONG_RUN_STEPS = 100  # steps per run when FUZZ_ENV asks for a long run
MAX_STREAM = 400  # a stream this long is flushed before the next feed: checks re-read it whole
FIXTURES = Path(__file__).parents[1] / "fixtures" / "filter_fuzz"


# --- the reference: the contract read over the whole text at once ------------------------

FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")


def in_code_block(shown: str) -> bool:
    """Whether `shown` ends inside a fenced code block: a line that starts (after at most
    three spaces) with three or more backticks or tildes opens one, and the next such line
    of the same character closes it. A last, unfinished line counts once its run is there."""
    opened = ""
    for line in shown.split("\n"):
        fence = FENCE_LINE.match(line)
        if fence is not None:
            char = fence.group(1)[0]
            if not opened:
                opened = char
            elif char == opened:
                opened = ""
    return bool(opened)


@dataclass
class Reading:
    """What the contract says of a whole text: what is shown, each stripped region, and the
    span (or span to the end) the text ends inside, with its text after the opener."""

    shown: str
    stripped: list[str]
    open_span: Pattern | None = None
    body: str = ""


def reference(text: str, registry: Registry) -> Reading:
    """The leftmost opener that is live (special, or plain outside a code block) starts
    scaffolding; a span ends at its first end marker after the opener (at a tie, the
    shorter: shortest match), or else at the end of the text."""
    shown, stripped, at = "", [], 0
    while (hit := _next_opener(text, at, registry, shown)) is not None:
        start, pattern = hit
        shown += text[at:start]
        after = start + len(pattern.start)
        if pattern.kind == "token":
            stripped.append(pattern.start)
            at = after
            continue
        ends = sorted((found, len(e)) for e in pattern.ends if (found := text.find(e, after)) >= 0)
        if not ends:
            stripped.append(text[start:])
            return Reading(shown, stripped, pattern, text[after:])
        at = ends[0][0] + ends[0][1]
        stripped.append(text[start:at])
    return Reading(shown + text[at:], stripped)


def _next_opener(text: str, at: int, registry: Registry, shown: str) -> tuple[int, Pattern] | None:
    search = at
    while True:
        hits = [(found, p) for p in registry if (found := text.find(p.start, search)) >= 0]
        if not hits:
            return None
        start, pattern = min(hits, key=lambda hit: hit[0])
        if pattern.special or not in_code_block(shown + text[at:start]):
            return start, pattern
        search = start + 1  # a plain marker in a code block is text


def longest_end_prefix(body: str, ends: tuple[str, ...]) -> str:
    """The longest tail of a span's body that is a proper prefix of one of its ends."""
    tails = [e[:k] for e in ends for k in range(1, len(e)) if body.endswith(e[:k])]
    return max(tails, key=len, default="")


# --- registries: what a fixture and a state machine run name --------------------------------


@dataclass(frozen=True)
class RegistrySpec:
    """`profiles` (None: none, not even the default) plus extra `patterns`, in that order."""

    profiles: tuple[str, ...] | None = ()
    patterns: tuple[Pattern, ...] = ()

    def build(self) -> Registry:
        base = () if self.profiles is None else registry_with(*self.profiles)
        return (*base, *self.patterns)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.profiles is not None:
            data["profiles"] = list(self.profiles)
        if self.patterns:
            data["patterns"] = [
                {"kind": p.kind, "start": p.start, "ends": list(p.ends), "special": p.special}
                for p in self.patterns
            ]
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
                source="tests/fixtures/filter_fuzz",
            )
            for i, p in enumerate(data.get("patterns", ()))
        )
        return cls(None if profiles is None else tuple(profiles), patterns)


# Few characters, so that random markers overlap, share prefixes and meet code fences.
MARKER_CHARS = "<|>/ab`~\n é｜"
markers = st.text(MARKER_CHARS, min_size=1, max_size=7)
KINDS: list[PatternKind] = ["span", "span", "token", "to_end"]  # spans twice: they nest


@st.composite
def random_pattern(draw: st.DrawFn, index: int) -> Pattern | None:
    kind = draw(st.sampled_from(KINDS))
    ends = draw(st.lists(markers, min_size=1, max_size=2, unique=True)) if kind == "span" else []
    try:
        return Pattern(
            f"fuzz-{index}", kind, draw(markers), ends=tuple(ends),
            special=draw(st.booleans()), source="fuzz",
        )  # fmt: skip
    except ValueError:  # refused by the registry API: not a registry anyone can build
        return None


def accepted(registry: Registry) -> bool:
    try:
        ScaffoldingFilter(registry)
    except ValueError:
        return False
    return True


@st.composite
def registry_specs(draw: st.DrawFn) -> RegistrySpec:
    """Built-in profiles, random patterns, or random patterns on top of profiles; each
    random pattern is kept only if the registry API accepts the registry with it."""
    choice = draw(st.sampled_from(["builtin", "random", "mixed"]))
    profiles = None
    if choice != "random":
        profiles = tuple(draw(st.lists(st.sampled_from(sorted(PROFILES)), max_size=3, unique=True)))
    spec = RegistrySpec(profiles)
    if choice != "builtin":
        for index in range(draw(st.integers(1, 4))):
            pattern = draw(random_pattern(index))
            grown = RegistrySpec(profiles, (*spec.patterns, pattern)) if pattern else spec
            if accepted(grown.build()):
                spec = grown
    assume(spec.build())
    return spec


def chunks_for(registry: Registry) -> st.SearchStrategy[str]:
    """Chunks that make markup likely: whole markers (openers, lone closers), spans, split
    markers, one-character-off look-alikes, fences, prose and any text."""
    marks = sorted({p.start for p in registry} | {e for p in registry for e in p.ends})
    spans = [p for p in registry if p.kind == "span"]
    chars = "".join(sorted(set("".join(marks)))) + "xy \n"
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
        self.rests: dict[str, list[str]] = {}  # an opener's proper prefix: what completes it
        for p in self.registry:
            for k in range(1, len(p.start)):
                self.rests.setdefault(p.start[:k], []).append(p.start[k:])
        self.longest = max(len(m) for p in self.registry for m in (p.start, *p.ends))

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
        assert len(held) < self.longest, "held back more than the longest marker minus one"
        if whole.open_span is None:
            assert self.shown + held == whole.shown, "shown + held is not the whole text's result"
            assert (f.stripped_chars, f.stripped_spans) == (total, len(whole.stripped))
            assert not held or any(
                reference(self.fed + rest, self.registry).shown == self.shown
                for rest in self.rests.get(held, ())
            ), f"held {held!r}, which no opener's completion strips whole"
        else:
            assert self.shown == whole.shown, "shown text differs from the whole text's result"
            assert (f.stripped_chars + len(held), f.stripped_spans + 1) == (
                total,
                len(whole.stripped),
            )
            assert held == longest_end_prefix(whole.body, whole.open_span.ends), (
                f"inside a span, held {held!r}"
            )
        if f.stripped_spans:
            assert f.first_span == whole.stripped[0][:PREVIEW_CHARS]
        for k in range(1, min(len(self.fed), self.longest) + 1):
            for rest in self.rests.get(self.fed[-k:], ()):
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
    """The profile's settings, or for FUZZ_ENV=N, N runs of LONG_RUN_STEPS steps."""
    raw = environ.get(FUZZ_ENV, "")
    if not raw:
        return settings()
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
    assert fuzz_settings({}).max_examples == settings().max_examples


def test_fuzz_examples_variable_must_be_a_positive_number():
    with pytest.raises(pytest.UsageError, match=FUZZ_ENV):
        fuzz_settings({FUZZ_ENV: "lots"})
