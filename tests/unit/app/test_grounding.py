"""Grounding: the threshold on the best hit, the cited notes, the sample notes both sides."""

from __future__ import annotations

import pytest

from scaffold_guard.app.rag.grounding import is_grounded, sources
from scaffold_guard.app.rag.index import NotesIndex
from scaffold_guard.app.rag.types import Hit


def hit(path: str, score: float) -> Hit:
    return Hit(path=path, heading="h", text="t", score=score)


@pytest.mark.parametrize(
    ("scores", "threshold", "grounded"),
    [
        ([], 0.5, False),
        ([0.49], 0.5, False),
        ([0.5], 0.5, True),
        ([1.7, 0.2], 0.5, True),
        ([0.2, 0.1], 0.5, False),
    ],
)
def test_is_grounded_when_the_best_score_reaches_the_threshold(
    scores: list[float], threshold: float, grounded: bool
):
    assert is_grounded([hit("/homelab/a.md", s) for s in scores], threshold) is grounded


def test_sources_are_distinct_paths_in_rank_order():
    hits = [hit(p, 1.0) for p in ["/homelab/b.md", "/homelab/a.md", "/homelab/b.md"]]
    assert sources(hits) == ["/homelab/b.md", "/homelab/a.md"]


@pytest.mark.parametrize(
    "question",
    [
        "When do backups run?",
        "How do I restore a file from a backup?",
        "how is DNS set up for the local zone",
        "how are certificates renewed",
        "how do I add a VPN peer",
        "which VMs run on the Proxmox cluster",
        "when are ZFS scrubs",
        "How do I check the UPS battery?",
        "what is the retention policy for backups",
        "how do I restore the nextcloud database",
    ],
)
def test_questions_the_sample_notes_answer_are_grounded(sample_index: NotesIndex, question: str):
    assert is_grounded(sample_index.search(question))


@pytest.mark.parametrize(
    "question",
    [
        "What is the capital of France?",
        "Write me a poem about cats",
        "best pizza recipe for dinner",
        "who won the world cup in 2018",
        "how do I change a car tire",
        "what time is it in Tokyo",
    ],
)
def test_off_topic_questions_are_not_grounded(sample_index: NotesIndex, question: str):
    assert not is_grounded(sample_index.search(question))
