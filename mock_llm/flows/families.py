"""The model families a family flow can name, and which family a model name names.

The conformance kit's oracle, kept apart from the guard on purpose: a family flow states
what a correct page shows for a model of the families that write its markup (`Flow.family`
and `Flow.written_by`) and for any other model (`Flow.elsewhere`), and this table says
which families a model name names. The guard keeps its own table
(guardrail/model_profiles.py); tests/unit/project/test_family_tables.py replays every
family flow through the guard for a name of each family here, so a gap in the guard's
table fails there and in the kit's G13/G15, never hides behind a shared import.

Deliberate choices:
- A key matches where it starts a word of the lower-cased name (`llama` in
  `Meta-Llama-3.1-8B`, not in `ollama`), as vendors and servers name their models.
- The table is the vendors' naming, not the guard's profile list: it says nothing of how
  markup is stripped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME_CAP = 256
"""Characters of a model name that are looked at (names come from clients)."""


@dataclass(frozen=True)
class ModelFamily:
    """Models whose names contain one of `keys` at a word start are of this family."""

    name: str
    keys: tuple[str, ...]


MODEL_FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily("LFM2", ("lfm", "liquid")),
    # Qwen3.5 writes Qwen3-Coder's XML calls (vllm qwen3coder_tool_parser.py serves both).
    ModelFamily("Qwen3-Coder", ("qwen3-coder", "qwen3coder", "qwen-coder", "qwen3.5")),
    ModelFamily("Qwen", ("qwen", "qwq")),
    ModelFamily("Gemma", ("gemma", "functiongemma")),
    ModelFamily("DeepSeek", ("deepseek",)),
    ModelFamily("gpt-oss", ("gpt-oss", "gpt_oss")),
    ModelFamily(
        "Mistral",
        ("mistral", "magistral", "devstral", "ministral", "mixtral", "codestral", "pixtral"),
    ),
    ModelFamily("Llama", ("llama",)),
    ModelFamily("Kimi", ("kimi", "moonshot")),
    ModelFamily("GLM", ("glm", "chatglm")),
    ModelFamily("MiniMax", ("minimax",)),
    ModelFamily("Jamba", ("jamba",)),
    ModelFamily("Granite", ("granite",)),
    ModelFamily("Hermes", ("hermes", "openhermes", "nous")),
    ModelFamily("InternLM", ("internlm",)),
    ModelFamily("Command", ("command-r", "command-a", "c4ai", "cohere", "aya")),
    ModelFamily("Phi", ("phi",)),
    ModelFamily("Seed-OSS", ("seed-oss", "seed_oss")),
    # llama.cpp's parser tests (tests/test-chat.cpp): Step 3.5 writes Qwen3-Coder's calls,
    # Ling 3.0 (Bailing V3) GLM's, Reka Edge and MiMo-VL Hermes' JSON, Apriel <tool_calls>
    ModelFamily("StepFun", ("stepfun", "step-3")),
    ModelFamily("Ling", ("ling-", "bailing")),
    ModelFamily("Reka", ("reka",)),
    ModelFamily("MiMo", ("mimo",)),
    ModelFamily("Apriel", ("apriel",)),
    ModelFamily("Nemotron", ("nemotron",)),
)

FAMILY_NAMES = tuple(family.name for family in MODEL_FAMILIES)
"""The model families a flow's `family` and `written_by` may name."""

_KEY = re.compile(
    r"(?<![a-z])(?:"
    + "|".join(
        re.escape(key)
        for key in sorted((k for f in MODEL_FAMILIES for k in f.keys), key=len, reverse=True)
    )
    + ")"
)
_BY_KEY = {key: family.name for family in MODEL_FAMILIES for key in family.keys}


def families_named(model: object) -> frozenset[str]:
    """The families the model name names (none for a name that is not a string)."""
    if not isinstance(model, str):
        return frozenset()
    name = model[:NAME_CAP].lower()
    return frozenset(_BY_KEY[found.group()] for found in _KEY.finditer(name))


def written_for(writers: frozenset[str] | tuple[str, ...], model: object) -> bool:
    """Whether a model of that name writes markup that the families `writers` write."""
    return not families_named(model).isdisjoint(writers)
