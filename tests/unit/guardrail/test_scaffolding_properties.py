"""Hypothesis properties of the filter, for any text and any chunking.

Example counts and (de)randomization come from the root conftest's profile; no test sets a
deadline, so no example's timing can decide a verdict.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from guardrail.registries import DEFAULT_REGISTRY, PROFILES, registry_with
from guardrail.scaffolding import ScaffoldingFilter

from ..helpers.scaffolding import cut_at, reasoned, run

OPENERS = [p.start for p in DEFAULT_REGISTRY]
LONGEST = max(len(o) for o in OPENERS)
START, END = "<|tool_call_start|>", "<|tool_call_end|>"

# An independent oracle for the default registry: the same semantics as one regex.
ORACLE = re.compile(
    r"<\|tool_call_start\|>.*?(?:<\|tool_call_end\|>|\Z)|<\|tool_calls\|>|<\|tool_call\|>",
    re.DOTALL,
)

# Fragments that make markup likely: markers, their prefixes, look-alikes and prose.
PARTS = [
    START, END, "<|tool_calls|>", "<|tool_call|>", "<|tool_", "<|", "<", "|>", "tool_call",
    "<|some_other_token|>", "[read(path='/homelab/a.md')]", " a < b ", "é✓", "\n", "x",
]  # fmt: skip
markupish = st.lists(st.sampled_from(PARTS) | st.text(max_size=5), max_size=30).map("".join)


@st.composite
def text_and_cuts(draw: st.DrawFn, texts: st.SearchStrategy[str] = markupish):
    text = draw(texts)
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=12))
    return text, cut_at(text, *cuts)


@given(text_and_cuts())
def test_any_chunking_gives_the_output_of_the_whole_text(case: tuple[str, list[str]]):
    text, chunks = case
    whole, f_whole = run([text])
    split, f_split = run(chunks)
    assert split == whole
    assert f_split.stripped_chars == f_whole.stripped_chars
    assert (f_split.stripped_spans, f_split.first_span) == (
        f_whole.stripped_spans,
        f_whole.first_span,
    )


@given(text_and_cuts())
def test_output_matches_the_one_regex_oracle(case: tuple[str, list[str]]):
    text, chunks = case
    assert run(chunks)[0] == ORACLE.sub("", text)


@given(text_and_cuts())
def test_stripped_chars_plus_output_length_is_input_length(case: tuple[str, list[str]]):
    text, chunks = case
    out, f = run(chunks)
    assert f.stripped_chars + len(out) == len(text)


@given(text_and_cuts())
def test_held_back_text_never_exceeds_longest_marker_minus_one(case: tuple[str, list[str]]):
    _, chunks = case
    f = ScaffoldingFilter()
    for chunk in chunks:
        f.feed(chunk)
        assert len(f.held) <= LONGEST - 1


WHOLE_PARTS = [
    START, END, "<|tool_calls|>", "<|tool_call|>", "<|some_other_token|>", "prose ",
    " a < b ", "[read(path='/homelab/a.md')]", "é✓\n", "<<<< ",
]  # fmt: skip
whole_markup = st.lists(st.sampled_from(WHOLE_PARTS), max_size=25).map("".join)


@given(text_and_cuts(whole_markup))
def test_no_registered_opener_survives(case: tuple[str, list[str]]):
    """Built from whole fragments: every opener in the input is gone from the output."""
    out, _ = run(case[1])
    assert not any(opener in out for opener in OPENERS)


no_openers = st.text(alphabet="<|>_toolcalsrtdbe \n", max_size=60).filter(
    lambda t: not any(o in t for o in OPENERS)
)


@given(text_and_cuts(no_openers))
def test_text_without_markers_passes_unchanged(case: tuple[str, list[str]]):
    text, chunks = case
    out, f = run(chunks)
    assert out == text
    assert f.stripped_chars == 0


@given(text_and_cuts(st.text()))
def test_arbitrary_unicode_is_chunking_invariant(case: tuple[str, list[str]]):
    text, chunks = case
    assert run(chunks)[0] == run([text])[0] == ORACLE.sub("", text)


ALL_PROFILES = registry_with(*PROFILES)
PROFILE_PARTS = [
    *(p.start for p in ALL_PROFILES), *(e for p in ALL_PROFILES for e in p.ends),
    *(m for p in ALL_PROFILES for m in (*p.trailers, *p.quotes)),
    "```\n", "~~~\n", "\n", "<tool", "<|", "{\"name\": \"x\"}", "text ", "`", "``",
    "{", "}", "[", "f>", "f{x:", "f[ARGS]", "We ", "f(", "k</arg_key>", " ",
]  # fmt: skip
profile_text = st.lists(st.sampled_from(PROFILE_PARTS), max_size=25).map("".join)


# Every profile at once makes a wider space than one: three times the profile's examples.
@settings(max_examples=3 * settings().max_examples)
@given(text_and_cuts(profile_text))
def test_every_profile_together_is_chunking_invariant(case: tuple[str, list[str]]):
    """Whatever the chunking, the same answer, the same reasoning routed out of it, and not
    a character lost: shown, stripped or reasoning (a reasoning span's body)."""
    text, chunks = case
    whole, thought, f_whole = reasoned([text], ALL_PROFILES)
    split, split_thought, f_split = reasoned(chunks, ALL_PROFILES)
    assert (split, split_thought) == (whole, thought)
    assert f_split.stripped_chars + len(split) + len(split_thought) == len(text)
    assert (f_split.stripped_spans, f_split.first_span) == (
        f_whole.stripped_spans,
        f_whole.first_span,
    )
