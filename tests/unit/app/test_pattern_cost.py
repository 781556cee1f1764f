"""scaffold_guard.app.rag.pattern_cost: a grep pattern's compile cost, judged before it is
compiled."""

from __future__ import annotations

import contextlib

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from scaffold_guard.app.rag.pattern_cost import MAX_EXPANDED_SIZE, MAX_REPEAT, pattern_problem


@pytest.mark.parametrize(
    "pattern",
    [
        "restic",
        r"\d{3}-\d{4}",
        "a{2,5}",
        "x{1000}",
        "[a-z]{1000}",
        r"\p{L}{3}",
        r"\x{41}{10}",
        "(?:ab){100}c{50}",
        "(a+)+$",
        "a{1,}",
        "{not a repeat}",
        "a{,1000}",
        "[[a-z]--[aeiou]]{5}",
        r"[\]{]{1000}",
        "(?P<name>nas){2}",
        "unbalanced)){99}",
    ],
)
def test_patterns_a_search_needs_are_accepted(pattern: str):
    assert pattern_problem(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("a{10000003}", "10000003 times"),  # regression: 18.8 s and 2.6 GB to compile
        ("a{1000000000}", "1000000000 times"),  # regression: the process killed for memory
        ("a{1001}", "1001 times"),
        ("a{5,1001}", "1001 times"),
        ("a{,1001}", "1001 times"),
        ("(a{1000}){100}", "more than 10000 pieces"),
        ("(?:(?:a{100}){100}){100}", "more than 10000 pieces"),
        ("a{999}" * 11, "more than 10000 pieces"),
        ("(a|b|c){999}(d|e|f|g|h|i|j|k|l|m|n){999}", "more than 10000 pieces"),
        ("[abc]{1000}" * 11, "more than 10000 pieces"),
    ],
)
def test_patterns_that_would_expand_too_far_are_refused_in_words(pattern: str, words: str):
    problem = pattern_problem(pattern)
    assert problem is not None
    assert words in problem
    assert "shorter pattern" in problem


def test_the_limits_are_the_documented_ones():
    assert (MAX_REPEAT, MAX_EXPANDED_SIZE) == (1000, 10_000)


@given(st.text(alphabet="ab(){},|*+?[]\\0123456789:^", max_size=60))
def test_any_text_is_judged_without_failing_and_what_passes_compiles_or_is_invalid(pattern: str):
    """The check reads any text (it never raises), and a pattern it accepts reaches the
    compiler as a cheap one: compiling it gives a pattern or the compiler's own error,
    never a MemoryError."""
    problem = pattern_problem(pattern)
    assert problem is None or problem.endswith("Use a shorter pattern.")
    if problem is not None:
        return
    with contextlib.suppress(regex.error, OverflowError, ValueError, RecursionError):
        regex.compile(pattern)  # an invalid one: grep then searches it as plain text
