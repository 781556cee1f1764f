"""Whether a question is grounded in the notes, and which notes a turn cites. Pure.

A turn is grounded when its best hit's score reaches the threshold, deflected otherwise
(docs/architecture.md, the turn's retrieval step).
"""

from __future__ import annotations

from collections.abc import Sequence

from scaffold_guard.app.rag.types import Hit

DEFAULT_GROUNDING_THRESHOLD = 0.55
"""The score the best hit needs for a question to count as grounded in the notes.

A hit's score is its BM25 score divided by the IDF mass of the question's words
(`NotesIndex.search`), so it measures how much of the question the section accounts for,
and a word no note contains weighs the most. Chosen by scoring 49 questions the bundled
sample notes answer and 49 they do not (tests/unit/app/test_grounding.py pins a sample of both
sides): 0.55 sits in the gap between the bulk of both sides; the scores are in
docs/benchmarks.md ("The grounding threshold"). A lexical score cannot tell a general
question made of the notes' words ("what is an IP address") from one the notes answer.
Words only match as the porter stemmer sees them, so a much larger or differently worded
notes folder may want its own value.
"""


def is_grounded(hits: Sequence[Hit], threshold: float = DEFAULT_GROUNDING_THRESHOLD) -> bool:
    """Whether the notes have something relevant: the best hit's score reaches the threshold."""
    return any(hit.score >= threshold for hit in hits)


def sources(hits: Sequence[Hit]) -> list[str]:
    """The distinct virtual paths of the hits, in rank order."""
    return list(dict.fromkeys(hit.path for hit in hits))
