"""guardrail.scaffolding.trie_pattern: the openers' regex as a trie finds what the flat
alternation, longest marker first, finds."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from guardrail.scaffolding import trie_pattern

markers = st.lists(
    st.text("<|>ab\uff5c", min_size=1, max_size=6), min_size=1, max_size=8, unique=True
)


@given(markers, st.text("<|>ab\uff5c c", max_size=60))
def test_the_trie_finds_the_same_marker_as_the_flat_alternation_longest_first(
    found: list[str], text: str
):
    flat = re.compile("|".join(re.escape(m) for m in sorted(found, key=len, reverse=True)))
    trie = re.compile(trie_pattern(found))
    got, want = trie.search(text), flat.search(text)
    assert (got and got.span()) == (want and want.span())


def test_an_empty_set_of_markers_matches_nothing():
    assert re.compile(trie_pattern([])).search("anything") is None
