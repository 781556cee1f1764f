"""Throughput of the streaming scaffolding filter, next to baselines measured in the same run.

Times the filter on clean and scaffolding-dense text in chunks of 1 to 4096 characters,
against a bare scan, a bare generator, a naive re-run-the-regex filter and, for 1-char
chunks, decoding each chunk's JSON as a client does, and checks it stays linear. A missed
target (docs/benchmarks.md) prints FAIL and exits 1. Every run checks the output against
the one-regex oracle, so what is timed is the real work.

Deliberate choices: the linearity run repeats the same chunks twice over, so both runs
touch the same memory and a CPU cache boundary does not pose as the algorithm; the filter,
the floor, the bare generator and the doubled stream take turns within each of the best-of
rounds, so a drift in the machine's speed between minutes does not pose as a ratio.

    uv run python benchmarks/filter.py
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import orjson
from baseline import Figure, beside, path_of, read_baseline, this_machine, write_baseline
from verdicts import exit_status, verdict

from guardrail.scaffolding import ScaffoldingFilter

CHUNK_SIZES = (1, 4, 16, 64, 1024, 4096)
NAIVE_MIN_CHUNK = 64
FLOOR_TARGET = 0.6
"""Clean prose in 4096-char chunks: at least this share of the scan floor's speed."""
DENSE_DECODE_TARGET = 0.5
"""Markup in one-character chunks, the filter's worst case, costs at most half of what any
client already spends on each chunk, decoding its JSON (docs/benchmarks.md)."""
ORACLE = re.compile(
    r"<\|tool_call_start\|>.*?(?:<\|tool_call_end\|>|\Z)|<\|tool_calls\|>|<\|tool_call\|>",
    re.DOTALL,
)
PROSE = (
    "backups run nightly at 02:00 with restic to the NAS and the newest snapshot is verified "
    "every Sunday; restore a file by mounting the repository, copying it out, and checking "
    "its checksum against the log. DNS, certificates, the hypervisor and storage pools have "
    "runbooks of their own."
)
WORDS = PROSE.split()
DENSE_PIECES = (
    "Let me check the notes. ",
    "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>",
    "Backups run nightly<|tool_calls|> at 02:00, ",
    "and a < b holds; <|some_other_token|> stays. ",
    "<|tool_call|>",
)

Timer = Callable[[Sequence[str]], None]


def clean_prose(length: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < length:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:length]


def dense_scaffolding(length: int) -> str:
    block = "".join(DENSE_PIECES)
    return (block * (length // len(block) + 1))[:length]


def chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def run_filter(chunks: Sequence[str]) -> None:
    stream = ScaffoldingFilter()
    feed = stream.feed
    for chunk in chunks:
        feed(chunk)
    stream.flush()


def scan_floor(chunks: Sequence[str]) -> None:
    for chunk in chunks:
        _ = "<" in chunk  # the test itself is the work being timed


def _unchanged(chunks: Sequence[str]) -> Iterator[str]:
    yield from chunks


def bare_generator(chunks: Sequence[str]) -> None:
    for _ in _unchanged(chunks):
        pass


def chunk_line(text: str) -> bytes:
    """One streamed chat-completion chunk carrying `text`, as a client reads it."""
    return orjson.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "lfm2-1.2b",
            "choices": [
                {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}
            ],
        }
    )


def decode_chunks(chunks: Sequence[str]) -> None:
    """Baseline (d): what every client of a stream does per chunk, decode its JSON
    (orjson, the fastest decoder here); the lines are built before the clock starts."""
    loads = orjson.loads
    for line in _LINES[len(chunks)]:
        loads(line)


_LINES: dict[int, list[bytes]] = {}
"""The chunk lines (d) decodes, by chunk count: built once, outside the timing."""


def naive_filter(chunks: Sequence[str]) -> None:
    text = ""
    shown = 0
    for chunk in chunks:
        text += chunk
        cleaned = ORACLE.sub("", text)
        _new = cleaned[shown:]
        shown = len(cleaned)


def best_of(timer: Timer, chunks: Sequence[str], repeat: int) -> float:
    return best_of_each([(timer, chunks)], repeat)[0]


def best_of_each(runs: Sequence[tuple[Timer, Sequence[str]]], repeat: int) -> list[float]:
    """Each run's best time over `repeat` rounds, the runs taking turns within a round:
    this machine's speed drifts by half between minutes, and a ratio of two timings taken
    minutes apart measures the drift as much as the code."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for index, (timer, chunks) in enumerate(runs):
            start = time.perf_counter()
            timer(chunks)
            best[index] = min(best[index], time.perf_counter() - start)
    return best


def check_output(text: str, chunks: Sequence[str]) -> None:
    stream = ScaffoldingFilter()
    out = "".join(stream.feed(c) for c in chunks) + stream.flush()
    if out != ORACLE.sub("", text):
        raise SystemExit("the filter's output differs from the oracle: not timing a broken filter")


@dataclass(frozen=True)
class Row:
    text: str
    size: int
    chunks: int
    chars: int
    filter_s: float
    floor_s: float
    bare_s: float
    naive_s: float | None
    double_s: float
    decode_s: float | None  # (d), measured for 1-char chunks

    def rate(self, seconds: float) -> float:
        return self.chars / seconds

    def per_chunk_ns(self, seconds: float) -> float:
        return seconds / self.chunks * 1e9


def measure(name: str, text: str, size: int, repeat: int) -> Row:
    chunks = chunked(text, size)
    check_output(text, chunks)
    naive = best_of(naive_filter, chunks, 1) if size >= NAIVE_MIN_CHUNK else None
    decode = None
    if size == 1:
        _LINES[len(chunks)] = [chunk_line(chunk) for chunk in chunks]
        decode = best_of(decode_chunks, chunks, repeat)
        del _LINES[len(chunks)]
    runs = ((run_filter, chunks), (scan_floor, chunks), (bare_generator, chunks),
            (run_filter, chunks + chunks))  # fmt: skip
    filter_s, floor_s, bare_s, double_s = best_of_each(runs, repeat)
    return Row(
        text=name,
        size=size,
        chunks=len(chunks),
        chars=len(text),
        filter_s=filter_s,
        floor_s=floor_s,
        bare_s=bare_s,
        naive_s=naive,
        double_s=double_s,
        decode_s=decode,
    )


def table(rows: Sequence[Row]) -> list[str]:
    lines = [
        "| text | chunk | chunks | filter MB/s | filter ns/chunk | (a) floor MB/s"
        " | filter / floor | (b) bare ns/chunk | filter / bare per chunk | (c) naive MB/s"
        " | filter speed-up vs (c) | 2x stream time | (d) decode ns/chunk | filter / (d) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        naive = f"{r.rate(r.naive_s) / 1e6:.2f}" if r.naive_s else "n/a"
        speedup = f"{r.naive_s / r.filter_s:,.0f}x" if r.naive_s else "n/a"
        decode = f"{r.per_chunk_ns(r.decode_s):.0f}" if r.decode_s else "n/a"
        versus = f"{r.filter_s / r.decode_s:.2f}x" if r.decode_s else "n/a"
        lines.append(
            f"| {r.text} | {r.size} | {r.chunks:,} | {r.rate(r.filter_s) / 1e6:.1f}"
            f" | {r.per_chunk_ns(r.filter_s):.0f} | {r.rate(r.floor_s) / 1e6:.1f}"
            f" | {r.floor_s / r.filter_s:.2f}x | {r.per_chunk_ns(r.bare_s):.0f}"
            f" | {r.filter_s / r.bare_s:.2f}x | {naive} | {speedup}"
            f" | {r.double_s / r.filter_s:.2f}x | {decode} | {versus} |"
        )
    return lines


def row_of(rows: Sequence[Row], text: str, size: int) -> Row:
    return next(r for r in rows if r.text == text and r.size == size)


@dataclass(frozen=True)
class Headline:
    """The ratios the verdicts judge and the baseline keeps, and the clean 4 KiB speed."""

    floor_ratio: float  # clean prose, 4096-char chunks: share of the scan floor's speed
    clean_mb_s: float  # clean prose, 4096-char chunks
    bare_ratio: float  # clean prose, 1-char chunks: per chunk over the bare generator
    dense_decode: float  # dense, 1-char chunks: per chunk over decoding its JSON

    @staticmethod
    def of(rows: Sequence[Row]) -> Headline:
        prose_4096, prose_1 = row_of(rows, "clean prose", 4096), row_of(rows, "clean prose", 1)
        dense_1 = row_of(rows, "scaffolding-dense", 1)
        assert dense_1.decode_s is not None
        return Headline(
            floor_ratio=prose_4096.floor_s / prose_4096.filter_s,
            clean_mb_s=prose_4096.rate(prose_4096.filter_s) / 1e6,
            bare_ratio=prose_1.filter_s / prose_1.bare_s,
            dense_decode=dense_1.filter_s / dense_1.decode_s,
        )

    def figures(self) -> list[Figure]:
        return [
            Figure("clean 4096-char chunks, share of the scan floor", self.floor_ratio, "x",
                   "higher"),
            Figure("clean 4096-char chunks", self.clean_mb_s, "MB/s", "higher"),
            Figure("clean 1-char chunks, per chunk over the bare generator", self.bare_ratio,
                   "x", "lower"),
            Figure("dense 1-char chunks, per chunk over decoding its JSON", self.dense_decode,
                   "x", "lower"),
        ]  # fmt: skip


def verdicts(rows: Sequence[Row]) -> list[str]:
    head = Headline.of(rows)
    worst_linear = max(r.double_s / r.filter_s for r in rows)
    naive_64 = [row_of(rows, name, 64) for name in ("clean prose", "scaffolding-dense")]
    worst_speedup = min(r.naive_s / r.filter_s for r in naive_64 if r.naive_s)
    return [
        verdict(
            head.floor_ratio >= FLOOR_TARGET,
            f"clean prose, 4096-char chunks: {head.floor_ratio:.2f}x the scan floor"
            f" (target >= {FLOOR_TARGET}x)",
        ),
        verdict(
            head.bare_ratio <= 4,
            f"clean prose, 1-char chunks: {head.bare_ratio:.2f}x the bare"
            " generator's per-chunk cost (target <= 4x)",
        ),
        verdict(
            head.dense_decode <= DENSE_DECODE_TARGET,
            f"scaffolding-dense, 1-char chunks: {head.dense_decode:.2f}x the per-chunk cost of"
            f" decoding the chunk's JSON, (d) (target <= {DENSE_DECODE_TARGET}x)",
        ),
        verdict(
            worst_linear <= 2.2,
            f"linear: a stream twice as long takes at most {worst_linear:.2f}x the time"
            " (target <= 2.2x)",
        ),
        verdict(
            worst_speedup >= 20,
            f"{naive_64[0].chars / 1e6:g} MB in 64-char chunks: {worst_speedup:,.0f}x faster than"
            " the naive re-scanning filter, worst of both texts (target >= 20x)",
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Throughput of the streaming scaffolding filter.")
    parser.add_argument("--chars", type=int, default=1_000_000, help="stream length")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timing (best of)")
    parser.add_argument(
        "--write-baseline",
        action="store_true",
        help="record this run's figures as the last release's (benchmarks/baselines/filter.json)",
    )
    args = parser.parse_args(argv)
    texts = {
        "clean prose": clean_prose(args.chars),
        "scaffolding-dense": dense_scaffolding(args.chars),
    }
    rows: list[Row] = []
    for name, text in texts.items():
        for size in CHUNK_SIZES:
            rows.append(measure(name, text, size, args.repeat))
            print(f"measured {name} / {size}", file=sys.stderr, flush=True)
    print(f"Command: `uv run python benchmarks/filter.py {' '.join(argv or sys.argv[1:])}`")
    print(f"Machine: {this_machine()}; streams of {args.chars:,} characters, best of {args.repeat}")
    print()
    print("\n".join(table(rows)))
    print()
    figures = Headline.of(rows).figures()
    print("\n".join(beside(figures, read_baseline(path_of("filter")))))
    print()
    if args.write_baseline:
        written = write_baseline(path_of("filter"), figures)
        print(f"wrote {path_of('filter')} ({written.recorded}, {written.commit})\n")
    lines = verdicts(rows)
    print("\n".join(lines))
    return exit_status(lines)


if __name__ == "__main__":
    raise SystemExit(main())
