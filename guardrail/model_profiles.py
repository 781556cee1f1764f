"""Which scaffolding profiles a model name asks for: the data behind `--profiles auto`.

`auto` (the default of the guard proxy and the app) picks the registry per request from
the model names it goes by. Deliberate choices:

- Profiles are classed by their markers (`MARKER_CLASS`): `special` (special-token
  spellings no prose writes) or `look-alike` (one reads like text, e.g. `<tool_call>`, and
  could eat prose of a model that never emits it).
- Every name gets LFM2's registry and the `special` profiles (harmless to any text); a
  `look-alike` profile only when the name names its family (`FAMILIES`).
- A family matches where its key starts a word (`llama` in `Meta-Llama-3`, not in
  `ollama`); names are cut to `NAME_CAP` first and answers cached in a bounded cache,
  since names come from clients.
- `profiles_for(*models)` is the union over every name (an alias, the real name), so an
  alias that names no family costs nothing.
- A family with no profile of its own (Phi) maps to what exists; docs/contract.md lists it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from .patterns import Registry
from .registries import DEFAULT_REGISTRY, OPT_IN, PROFILES, registry_with

MarkerClass = Literal["special", "look-alike"]

MARKER_CLASS: dict[str, MarkerClass] = {
    "hermes": "look-alike",  # <tool_call>
    "qwen3-coder": "look-alike",  # <function=
    "function-tag": "look-alike",  # <function=f>{...}, <function name="f">{...}
    "mistral": "look-alike",  # [TOOL_CALLS], to the end of the stream
    "turn-ends": "special",  # <|im_end|>, <|endoftext|>
    "deepseek": "special",  # <(U+FF5C)tool_calls_begin(U+FF5C)>, its DSML forms
    "deepseek-xml": "look-alike",  # DSML with its markers stripped: <invoke name="f">
    "harmony": "special",  # <|channel|>commentary
    "llama": "special",  # <|python_tag|>, <|python_start|>
    "llama-json": "look-alike",  # a reply of nothing but {"name": ..., "parameters": ...}
    "llama-pythonic": "look-alike",  # a reply of nothing but [f(a=1), g(b='x')]
    "kimi": "special",  # <|tool_calls_section_begin|>, <|tool_call_begin|>
    "minimax": "look-alike",  # <minimax:tool_call>, [TOOL_CALL]
    "minimax-m1": "look-alike",  # <tool_calls> (MiniMax-M1, Jamba)
    "internlm": "special",  # <|action_start|>
    "cohere": "special",  # <|START_ACTION|>
    "gemma": "special",  # Gemma 4's <|tool_call>
    "gemma-plain": "look-alike",  # FunctionGemma's <start_function_call>, a bare call:f{...}
    "harmony-residue": "look-alike",  # analysisWe...assistantfinal, at the answer's start
    "seed-oss": "look-alike",  # <seed:tool_call>
    "nemotron": "look-alike",  # <TOOLCALL>
    "glm": "look-alike",  # <arg_key>
    "echo": "look-alike",  # [Calling tool: (opt-in only: never auto, never all)
}

SPECIAL_PROFILES: tuple[str, ...] = tuple(n for n, c in MARKER_CLASS.items() if c == "special")


@dataclass(frozen=True)
class Family:
    """Model names containing one of `keys` (at a word start) get `profiles`."""

    name: str
    keys: tuple[str, ...]
    profiles: tuple[str, ...]
    note: str = ""


FAMILIES: tuple[Family, ...] = (
    Family("LFM2", ("lfm", "liquid"), (), "its markup is in every registry"),
    Family(
        "Qwen3-Coder",
        ("qwen3-coder", "qwen3coder", "qwen-coder", "qwen3.5"),
        ("hermes", "qwen3-coder"),
        "Qwen3.5 writes Qwen3-Coder's XML calls",
    ),
    Family(
        "Qwen",
        ("qwen", "qwq"),
        ("hermes", "qwen3-coder", "llama-json"),
        "a reply of nothing but a JSON call is a call, as llama.cpp's Hermes 2 Pro parser reads"
        " it; Qwen3-Next, 3.6 and 3.8 write Qwen3-Coder's XML calls too, its wrapper often"
        " dropped (ollama PR #17354, smg-project/smg PR #2127)",
    ),
    Family(
        "Gemma",
        ("gemma", "functiongemma"),
        ("gemma-plain", "llama-json", "llama-pythonic"),
        "Gemma 3 has no call tokens: Google's function-calling guide prompts a Python list of"
        " calls as the whole reply, and servers read it with Llama's JSON and pythonic parsers"
        " (smg-project/smg #1234, vllm #15403)",
    ),
    Family(
        "DeepSeek",
        ("deepseek",),
        ("deepseek", "deepseek-xml"),
        "DSML with its markers stripped (`<invoke name=...>`) only for DeepSeek names",
    ),
    Family(
        "gpt-oss",
        ("gpt-oss", "gpt_oss", "harmony"),
        ("harmony", "harmony-residue"),
        "the residue only at the answer's start",
    ),
    Family(
        "Mistral",
        ("mistral", "magistral", "devstral", "ministral", "mixtral", "codestral", "pixtral"),
        ("mistral",),
    ),
    Family(
        "Llama",
        ("llama",),
        ("llama-json", "llama-pythonic", "function-tag"),
        "a reply of nothing but JSON calls (Llama 3.1+) or a Python list of calls (Llama 3.2"
        " to 4), with no marker, is a call; Llama 3.1's custom `<function=f>{...}</function>`",
    ),
    Family("Kimi", ("kimi", "moonshot"), ("kimi",)),
    Family(
        "GLM",
        ("glm", "chatglm"),
        ("hermes", "glm"),
        "GLM-4.5+ wraps calls in `<tool_call>`; GLM-5 also writes bare `<arg_key>` pairs",
    ),
    Family("MiniMax", ("minimax",), ("minimax", "minimax-m1")),
    Family("Jamba", ("jamba",), ("minimax-m1",), "`<tool_calls>`, as MiniMax-M1"),
    Family(
        "Granite",
        ("granite",),
        ("hermes",),
        "Granite 4; Granite 3's token is in the default registry",
    ),
    Family("Hermes", ("hermes", "openhermes", "nous"), ("hermes",)),
    Family("InternLM", ("internlm",), ("internlm",)),
    Family("Command", ("command-r", "command-a", "c4ai", "cohere", "aya"), ("cohere",)),
    Family(
        "Phi",
        ("phi",),
        (),
        "no profile of its own: Phi-4-mini's bare token is in the default registry",
    ),
    Family("Seed-OSS", ("seed-oss", "seed_oss"), ("seed-oss",)),
    Family(
        "StepFun",
        ("stepfun", "step-3"),
        ("hermes", "qwen3-coder"),
        "Step 3.5 writes Qwen3-Coder's XML calls",
    ),
    Family("Ling", ("ling-", "bailing"), ("hermes", "glm"), "Ling 3.0 writes GLM's calls"),
    Family("Reka", ("reka",), ("hermes",)),
    Family("MiMo", ("mimo",), ("hermes",)),
    Family("Apriel", ("apriel",), ("minimax-m1",), "`<tool_calls>`, as MiniMax-M1"),
    Family(
        "Nemotron",
        ("nemotron",),
        ("nemotron", "hermes", "qwen3-coder"),
        "Nemotron Nano 2's `<TOOLCALL>`; Nemotron 3 Nano writes Qwen3-Coder's XML calls in"
        " `<tool_call>`; a Llama-Nemotron also matches Llama",
    ),
)

NAME_CAP = 256
"""Characters of a model name that are looked at; the rest is ignored."""

_KEYS = re.compile(
    "(?<![a-z])(?:"
    + "|".join(
        re.escape(key)
        for key in sorted({k for f in FAMILIES for k in f.keys}, key=len, reverse=True)
    )
    + ")"
)
_FAMILY_OF_KEY = {key: family for family in FAMILIES for key in family.keys}


def families_of(*models: object) -> tuple[Family, ...]:
    """The families whose keys any of the (cut) model names contains, in table order."""
    found = [_families_of(m[:NAME_CAP].lower()) for m in models if isinstance(m, str)]
    if len(found) == 1:
        return found[0]
    union = {family for families in found for family in families}
    return tuple(f for f in FAMILIES if f in union)


@functools.lru_cache(maxsize=512)
def _families_of(name: str) -> tuple[Family, ...]:
    found = {_FAMILY_OF_KEY[m.group()] for m in _KEYS.finditer(name)}
    return tuple(f for f in FAMILIES if f in found)


def profiles_for(*models: object) -> tuple[str, ...]:
    """The profiles `auto` adds to LFM2's registry for an answer of `models` (the names one
    request goes by): the `special` ones and the families' own that any name names."""
    named = (p for f in families_of(*models) for p in f.profiles)
    return tuple(dict.fromkeys((*SPECIAL_PROFILES, *named)))


def registry_for(*models: object) -> Registry:
    """The registry `auto` filters an answer of `models` with."""
    return _registry(profiles_for(*models))


@functools.lru_cache(maxsize=64)
def _registry(profiles: tuple[str, ...]) -> Registry:
    return registry_with(*profiles)


@dataclass(frozen=True)
class ProfileChoice:
    """A `--profiles` / `SG_SCAFFOLD_PROFILES` setting: `auto`, or a fixed list of profiles
    (`none` and empty: LFM2 alone; `all`: every profile but the OPT_IN ones, `every` set so
    that it reads back as `all`)."""

    auto: bool = True
    names: tuple[str, ...] = ()
    every: bool = False

    def registry(self, *models: object) -> Registry:
        """The registry for an answer of `models` (only `auto` reads them)."""
        if self.auto:
            return registry_for(*models)
        return _registry(self.names) if self.names else DEFAULT_REGISTRY

    def describe(self, *models: object) -> str:
        """What a log line says was applied to an answer of `models`: the setting, or under
        `auto` the families the names matched (`auto:Qwen3-Coder,Qwen`; `auto:unknown` for
        none). Family names hold no blank, so the value is one log field."""
        if not self.auto:
            return str(self)
        return "auto:" + (",".join(f.name for f in families_of(*models)) or "unknown")

    def __str__(self) -> str:
        if self.auto:
            return "auto"
        return "all" if self.every else ",".join(self.names) or "none"


AUTO = ProfileChoice()


def parse_profiles(text: str) -> ProfileChoice:
    """`auto`, `none`, `all` or comma-separated profile names; ValueError names the
    unknown ones."""
    words = tuple(dict.fromkeys(w.strip() for w in text.split(",") if w.strip()))
    if words == ("auto",):
        return AUTO
    if words in ((), ("none",)):
        return ProfileChoice(auto=False)
    if words == ("all",):
        every = tuple(p for p in PROFILES if p not in OPT_IN)
        return ProfileChoice(auto=False, names=every, every=True)
    unknown = [w for w in words if w not in PROFILES]
    if unknown:
        known = ", ".join(["auto", "none", "all", *sorted(PROFILES)])
        raise ValueError(f"unknown profile(s) {', '.join(unknown)}; known: {known}")
    return ProfileChoice(auto=False, names=words)
