"""What one `feed` costs with the registry `auto` gives each model family, beside the default.

benchmarks/filter.py times the default registry (LFM2's markup). An app or the guard runs
`auto`'s registry for the model's name: LFM2's markup, every special profile (DeepSeek's
DSML spellings, harmony's reader in front) and the name's family's look-alike profiles. This
times one `feed` of each kind of chunk into a running filter for a name of each family, with
the default registry measured in the same run as the baseline: best of 7 `timeit` repeats.

No target: it is the table to read when a family's registry grows (docs/benchmarks.md,
"The registries `auto` gives").

    uv run python benchmarks/filter_registries.py
"""

from __future__ import annotations

import platform
import random
import timeit

from guardrail import registry_for
from guardrail.patterns import Registry
from guardrail.registries import DEFAULT_REGISTRY
from guardrail.scaffolding import ScaffoldingFilter

NAMES = ("lfm2-1.2b", "gpt-oss-20b", "qwen3:8b", "deepseek-v4-flash", "llama3.2:3b", "gemma4")
REPEATS = 7
WORDS = [
    "backups",
    "run",
    "nightly",
    "at",
    "02:00",
    "with",
    "restic",
    "to",
    "the",
    "NAS;",
    "check",
    "the",
    "notes,",
    "a",
    "<",
    "b",
]


def chunks() -> dict[str, str]:
    """The chunks timed: a small clean one, a big clean one, a big one with `<` in it."""
    rng = random.Random(1)
    text = " ".join(rng.choice(WORDS) for _ in range(2000))[:4096]
    return {"4 chars, clean": "abcd", "4 KB, clean": text.replace("<", "("), "4 KB with <": text}


def per_feed(registry: Registry, chunk: str) -> float:
    """Seconds for one feed of `chunk` into a filter that has already begun its answer."""
    stream = ScaffoldingFilter(registry)
    stream.feed("Hello. ")
    number = 200_000 if len(chunk) < 100 else 2_000
    return min(timeit.repeat(lambda: stream.feed(chunk), number=number, repeat=REPEATS)) / number


def main() -> None:
    kinds = chunks()
    rows = [("default (baseline)", DEFAULT_REGISTRY), *((n, registry_for(n)) for n in NAMES)]
    print("Command: `uv run python benchmarks/filter_registries.py`")
    print(f"Machine: {platform.system()}, Python {platform.python_version()}; best of {REPEATS}")
    print()
    print("| registry | patterns | " + " | ".join(f"{k} ns/feed" for k in kinds) + " |")
    print("|---|---:|" + "---:|" * len(kinds))
    for name, registry in rows:
        costs = [f"{per_feed(registry, chunk) * 1e9:,.0f}" for chunk in kinds.values()]
        print(f"| {name} | {len(registry)} | " + " | ".join(costs) + " |")


if __name__ == "__main__":
    main()
