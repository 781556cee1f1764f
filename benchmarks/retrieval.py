"""Retrieval quality over the bundled sample notes: recall@3 and MRR, next to a naive baseline.

QUESTIONS holds homelab questions, each with the notes that answer it; the app's own
search ranks them, read off as a turn's `sources`. The baseline, in the same run, ranks
whole notes by how many query terms they contain. A recall@3 under 0.9 prints FAIL and
exits 1 (docs/benchmarks.md).

    uv run python benchmarks/retrieval.py [--misses]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from verdicts import exit_status, verdict

from scaffold_guard.app.config import BUNDLED_NOTES
from scaffold_guard.app.rag.grounding import sources
from scaffold_guard.app.rag.index import NotesIndex
from scaffold_guard.app.rag.query import query_terms

TARGET_RECALL_AT_3 = 0.9
SEARCH_LIMIT = 10

QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("When do backups run?", ("backups.md",)),
    ("How do I restore a single file from a backup?", ("backups.md",)),
    ("How long are snapshots kept?", ("backup-notes.md",)),
    ("Where is the offsite copy of the backups?", ("backup-notes.md",)),
    ("What should I do when a backup fails?", ("backups.md",)),
    ("How do I renew the certificates?", ("certificates.md",)),
    ("Why do we use the DNS-01 challenge?", ("certificates.md",)),
    ("Which machine issues the Let's Encrypt certificates?", ("certificates.md",)),
    ("What are the IP addresses of the DNS resolvers?", ("dns.md",)),
    ("How do I add a host to the local DNS zone?", ("dns.md",)),
    ("How does the Pi-hole blocklist work?", ("dns.md",)),
    ("How many Proxmox nodes are in the cluster?", ("hypervisor.md",)),
    ("What happens to quorum when one node is down?", ("hypervisor.md",)),
    ("How do I create a VM from a template?", ("hypervisor.md",)),
    ("Where is Grafana?", ("monitoring.md",)),
    ("Where do alerts go?", ("monitoring.md",)),
    ("How do I reload Prometheus after a change?", ("monitoring.md",)),
    ("Which VLANs does the network have?", ("network.md",)),
    ("What is the IP of the NAS?", ("storage.md", "network.md")),
    ("What do I do when the network is down?", ("network.md",)),
    ("How do I replace a failed disk?", ("storage.md",)),
    ("When do the ZFS scrubs run?", ("storage.md",)),
    ("Which NFS exports does the NAS have?", ("storage.md",)),
    ("When are security updates installed?", ("updates.md",)),
    ("How are the Proxmox nodes upgraded?", ("updates.md",)),
    ("What should I do before a risky upgrade?", ("updates.md",)),
    ("What is plugged into the UPS?", ("ups-power.md",)),
    ("In which order do the machines shut down on battery?", ("ups-power.md",)),
    ("What happens when the power comes back after an outage?", ("ups-power.md",)),
    ("How do I add a new WireGuard peer?", ("vpn.md",)),
    ("Which port does the VPN listen on?", ("vpn.md",)),
    ("Which Home Assistant add-ons are installed?", ("services/home-assistant.md",)),
    ("How is Home Assistant backed up?", ("services/home-assistant.md",)),
    ("Where is the Nextcloud user data stored?", ("services/nextcloud.md",)),
    ("Which Nextcloud image runs?", ("services/nextcloud.md",)),
)

Ranker = Callable[[str], list[str]]


@dataclass(frozen=True)
class Scores:
    recall_at_3: float
    mrr: float
    ranks: list[int | None]  # per question: the rank of the first answering note, if found


def virtual(note: str) -> str:
    return f"/homelab/{note}"


def score(rank: Ranker, questions: Sequence[tuple[str, tuple[str, ...]]]) -> Scores:
    ranks: list[int | None] = []
    for question, answering in questions:
        wanted = {virtual(note) for note in answering}
        found = rank(question)
        ranks.append(next((i for i, note in enumerate(found, 1) if note in wanted), None))
    recall = sum(1 for r in ranks if r is not None and r <= 3) / len(ranks)
    mrr = sum(1 / r for r in ranks if r is not None) / len(ranks)
    return Scores(recall, mrr, ranks)


def app_ranker(index: NotesIndex) -> Ranker:
    return lambda question: sources(index.search(question, limit=SEARCH_LIMIT))


def naive_ranker(notes: Path) -> Ranker:
    """Whole notes by how many of the question's terms they contain (ties by path)."""
    texts = {
        virtual(path.relative_to(notes).as_posix()): path.read_text(encoding="utf-8").lower()
        for path in sorted(notes.rglob("*.md"))
    }

    def rank(question: str) -> list[str]:
        terms = query_terms(question)
        counts = {note: sum(term in text for term in terms) for note, text in texts.items()}
        return [note for note in sorted(counts, key=lambda n: (-counts[n], n)) if counts[note]]

    return rank


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list the questions missed at 3")
    args = parser.parse_args(argv)
    with NotesIndex(BUNDLED_NOTES, ":memory:", refresh_interval_s=3600) as index:
        index.refresh()
        ours = app_ranker(index)
        naive = naive_ranker(BUNDLED_NOTES)
        results = {
            "app search": score(ours, QUESTIONS),
            "naive word count (baseline)": score(naive, QUESTIONS),
        }
        print(f"retrieval over the sample notes, {len(QUESTIONS)} questions")
        print(f"{'ranker':30s} {'recall@3':>9s} {'MRR':>6s} {'not found':>10s}")
        for name, result in results.items():
            missing = sum(1 for r in result.ranks if r is None)
            print(f"{name:30s} {result.recall_at_3:9.3f} {result.mrr:6.3f} {missing:10d}")
        app_scores = results["app search"]
        if args.misses:
            print("\nquestions whose answering note is not in the app's first three:")
            for (question, answering), rank in zip(QUESTIONS, app_scores.ranks, strict=True):
                if rank is None or rank > 3:
                    found = ", ".join(ours(question)[:3]) or "nothing"
                    print(f"- {question} (wants {' or '.join(answering)}; rank {rank}): {found}")
    lines = [
        verdict(
            app_scores.recall_at_3 >= TARGET_RECALL_AT_3,
            f"recall@3 of the app's search: {app_scores.recall_at_3:.3f}"
            f" (target >= {TARGET_RECALL_AT_3})",
        )
    ]
    print("\n".join(lines))
    return exit_status(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
