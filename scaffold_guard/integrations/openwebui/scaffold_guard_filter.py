"""
title: Scaffold Guard
author: scaffold-guard
version: 0.1.0
license: MIT
description: Strips the raw tool-call markup small local models write into answers.
required_open_webui_version: 0.12.4

GENERATED FILE, do not edit by hand: in the scaffold-guard repository,
`uv run python -m scaffold_guard.integrations.openwebui.build` writes it.
It is the guardrail library's own code (the filter's modules of guardrail/ whole, the parts of
guardrail/policy.py it uses), then the filter class
(scaffold_guard/integrations/openwebui/filter_template.py), because Open WebUI runs a function
file with its own interpreter, where the library is not installed. A copy-paste
detector will report this file as a duplicate of guardrail/; it is one, made on purpose,
and the repository's tests fail when it is stale.

To install in Open WebUI, open Admin Panel > Functions, click +, paste this file, save it,
enable it and make it global (or attach it to models); see docs/integrations.md.
"""

# DeepSeek's markers are written with U+FF5C and U+2581 (as in guardrail/).
# ruff: noqa: RUF001

from __future__ import annotations

import ast
import functools
import json
import re
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol, TypeGuard

from pydantic import BaseModel, Field, field_validator

# ---- guardrail/json_shapes.py: the whole module after its imports


JSONObject = dict[str, object]
"""A JSON object as a reader holds it: each field is checked where it is read."""


def is_object(value: object) -> TypeGuard[JSONObject]:
    """Whether `value` is a JSON object."""
    return isinstance(value, dict)


def is_array(value: object) -> TypeGuard[list[object]]:
    """Whether `value` is a JSON array."""
    return isinstance(value, list)


def as_object(value: object) -> JSONObject | None:
    """`value` when it is a JSON object, else None."""
    return value if is_object(value) else None


def as_array(value: object) -> list[object]:
    """`value` when it is a JSON array (the list itself), else an empty list."""
    return value if is_array(value) else []


def objects(value: object) -> list[JSONObject]:
    """The members of `value` that are JSON objects, in order (none when it is no array)."""
    return [member for member in as_array(value) if is_object(member)]


def string_field(value: object, key: str) -> str | None:
    """`value[key]` when `value` is a JSON object and that field is a string, else None."""
    found = value.get(key) if is_object(value) else None
    return found if isinstance(found, str) else None


# ---- guardrail/shapes.py: the whole module after its imports


@dataclass(frozen=True)
class Lit:
    """This exact text."""

    text: str


@dataclass(frozen=True)
class Chars:
    """Between `least` and `most` characters of the regex class `cls` (e.g. `[A-Za-z_]`)."""

    cls: str
    least: int
    most: int

    def __post_init__(self) -> None:
        if not 0 <= self.least <= self.most or self.most == 0:
            raise ValueError(f"Chars {self.cls}: needs 0 <= least <= most, most > 0")
        re.compile(self.cls)  # a bad class fails here, at import, not mid-stream


@dataclass(frozen=True)
class Seq:
    """These parts one after another."""

    parts: tuple[Shape, ...]


@dataclass(frozen=True)
class Alt:
    """One of these options."""

    options: tuple[Shape, ...]


Shape = Lit | Chars | Seq | Alt


def seq(*parts: Shape) -> Seq:
    return Seq(parts)


def alt(*options: Shape) -> Alt:
    return Alt(options)


NAME = seq(Chars(r"[^\W\d]", 1, 1), Chars(r"[\w.\-]", 0, 63))
"""A function name as models write them: a letter (any script's) or `_`, then up to 63
letters, digits, `_`, `.` or `-` (ollama's Qwen3-Coder parser reads `<function=获取天气>`)."""
SPACE = Chars(r"[ \t\r\n]", 0, 4)
"""Up to four blanks (spaces, tabs, line breaks)."""


def complete(shape: Shape) -> str:
    """The regex of the whole shape."""
    if isinstance(shape, Lit):
        return re.escape(shape.text)
    if isinstance(shape, Chars):
        return f"{shape.cls}{{{shape.least},{shape.most}}}"
    if isinstance(shape, Seq):
        return "".join(complete(part) for part in shape.parts)
    return "(?:" + "|".join(complete(option) for option in shape.options) + ")"


def partial(shape: Shape) -> str:
    """The regex of every prefix of the shape, the empty one and the whole one included."""
    if isinstance(shape, Lit):
        heads = (re.escape(shape.text[:k]) for k in range(len(shape.text) + 1))
        return "(?:" + "|".join(heads) + ")"
    if isinstance(shape, Chars):
        return f"{shape.cls}{{0,{shape.most}}}"
    if isinstance(shape, Seq):
        return _partial_seq(shape.parts)
    return "(?:" + "|".join(partial(option) for option in shape.options) + ")"


def _partial_seq(parts: tuple[Shape, ...]) -> str:
    if not parts:
        return ""
    first, rest = parts[0], parts[1:]
    if not rest:
        return partial(first)
    return f"(?:{complete(first)}{_partial_seq(rest)}|{partial(first)})"


def max_len(shape: Shape) -> int:
    """The longest text the shape can match."""
    if isinstance(shape, Lit):
        return len(shape.text)
    if isinstance(shape, Chars):
        return shape.most
    if isinstance(shape, Seq):
        return sum(max_len(part) for part in shape.parts)
    return max(max_len(option) for option in shape.options)


@dataclass(frozen=True)
class Compiled:
    """A shape's two regexes and its bound."""

    full: re.Pattern[str]
    viable: re.Pattern[str]
    longest: int


@functools.lru_cache(maxsize=64)
def compiled(shape: Shape) -> Compiled:
    return Compiled(re.compile(complete(shape)), re.compile(partial(shape)), max_len(shape))


# ---- guardrail/patterns.py: the whole module after its imports


PatternKind = Literal[
    "span", "token", "to_end", "braced", "json_value", "json_reply", "pythonic_reply", "harmony"
]
Boundary = Literal["any", "word", "start"]
JsonStrings = Literal["never", "leading", "always"]
TRAILER_SPACE = 8
"""The blanks a trailer may follow its span's end marker by."""
BLANKS = " \t\r\n"
"""What counts as a blank before a trailer."""


@dataclass(frozen=True)
class Pattern:
    """One kind of scaffolding.

    Kinds: `span` is `start` ... one of `ends` (shortest match); `token` is `start` alone;
    `to_end` is `start` and everything after it to the end of the stream; `braced` is
    `start` and a body that runs to the `}` closing its first `{`, where text between two
    of `quotes` is opaque (Gemma's bare `call:name{key:<|"|>v<|"|>}`); `json_value` is
    `start` and a body that runs to the close of its first JSON object or array (Mistral's
    `[TOOL_CALLS]name[ARGS]{...}`, which has no end marker), `skips` read as whole tokens
    on the way (`[ARGS]` is not an array); `json_reply` is the whole reply when it is nothing
    but JSON calls with no marker (Llama 3.x, guardrail/json_reply.py; its `start` is `{`);
    `pythonic_reply` the whole reply when it is nothing but a Python list of calls
    (`[f(a=1)]`: Llama 3.2 to 4, guardrail/pythonic_reply.py; its `start` is `[`);
    `harmony` is gpt-oss's messages, routed by their headers to the answer, the reasoning or
    away (guardrail/harmony.py; its `start` is `<|channel|>`).

    A span's `quotes` are the format's own string quotes (Gemma 4's `<|"|>`): text between
    two of them is data, so an end marker quoted in an argument does not end the span.

    `json_strings`: where a span's body is JSON (`always`; `leading`: when it begins, after
    blanks, with `{` or `[`), a JSON string inside an object or array is data, so an end
    marker quoted in an argument does not end the span. Only where the format's body is
    JSON: a raw body (Qwen3-Coder's `<parameter=code>`) may hold unbalanced quotes.

    `special` says the markers are special tokens no prose writes: plain-text markers are
    left alone inside fenced code blocks. `hint` is the shape the start must be followed by
    to count (guardrail/shapes.py); `boundary` where it may begin: anywhere, not right
    after a letter, digit or `_` (`word`), or only at the very start of the answer
    (`start`). `trailers`: markers a span's end (or a JSON value's, or a token) may be
    followed by (after at most TRAILER_SPACE blanks) that are stripped with it, like the
    `</tool_call>` a Qwen3-Coder call without its opening `<tool_call>` still ends with.

    `reasoning`: the span's body is the model's reasoning, not a call (gpt-oss's analysis
    channel once a server dropped its tokens): it goes to the filter's take_reasoning(),
    and only the span's markers are stripped.
    """

    name: str
    kind: PatternKind
    start: str
    source: str
    ends: tuple[str, ...] = ()
    special: bool = True
    hint: Shape | None = None
    boundary: Boundary = "any"
    trailers: tuple[str, ...] = ()
    quotes: tuple[str, ...] = ()
    json_strings: JsonStrings = "never"
    skips: tuple[str, ...] = ()
    reasoning: bool = False
    _hash: int = field(init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._hash

    def __post_init__(self) -> None:
        # Hashed once: a registry (a tuple of patterns) is the key of the filter's caches,
        # looked up for every stream, and a dataclass's own hash is recomputed each time.
        values = tuple(getattr(self, f.name) for f in fields(self) if f.compare)
        object.__setattr__(self, "_hash", hash(values))
        if not self.start:
            raise ValueError(f"pattern {self.name!r}: empty start marker")
        if (self.kind == "span") != bool(self.ends) or any(not end for end in self.ends):
            raise ValueError(f"pattern {self.name!r}: a span needs end markers, others none")
        if self.reasoning and (self.kind != "span" or self.json_strings != "never"):
            raise ValueError(f"pattern {self.name!r}: only a plain span's body is reasoning")
        if self.trailers and self.kind not in ("span", "json_value", "token"):
            raise ValueError(
                f"pattern {self.name!r}: only a span, a JSON value or a token has trailers"
            )
        if any(trailer[:1] and trailer[0] in BLANKS for trailer in self.trailers):
            raise ValueError(
                f"pattern {self.name!r}: a trailer starts with a blank (blanks before it are"
                " taken anyway)"
            )
        if self.quotes and self.kind not in ("braced", "span"):
            raise ValueError(f"pattern {self.name!r}: only a braced or a span body has quotes")
        if self.quotes and self.json_strings != "never":
            raise ValueError(f"pattern {self.name!r}: a JSON body's quotes are its own")
        if self.json_strings != "never" and self.kind != "span":
            raise ValueError(f"pattern {self.name!r}: json_strings is for a span's body")
        if self.kind == "json_reply" and (self.start != "{" or self.hint is not None):
            raise ValueError(f"pattern {self.name!r}: a json_reply starts with {{ and no hint")
        if self.kind == "pythonic_reply" and (self.start != "[" or self.hint is not None):
            raise ValueError(f"pattern {self.name!r}: a pythonic_reply starts with [ and no hint")
        if self.kind == "harmony" and (self.start != "<|channel|>" or self.hint is not None):
            raise ValueError(f"pattern {self.name!r}: harmony starts with <|channel|>, no hint")
        if self.skips and self.kind != "json_value":
            raise ValueError(f"pattern {self.name!r}: only a json_value body has skips")
        groups = (
            (self.ends, "end"),
            (self.trailers, "trailer"),
            (self.quotes, "quote"),
            (self.skips, "skip"),
        )
        for group, what in groups:
            if any(not marker for marker in group):
                raise ValueError(f"pattern {self.name!r}: an empty {what}")
            for a in group:
                for b in group:
                    if a != b and a in b:  # "x" inside "axb": which one is seen depends on chunking
                        raise ValueError(
                            f"pattern {self.name!r}: {what} {a!r} is inside {b!r}: ambiguous"
                        )
        for end in self.ends:
            for quote in self.quotes:
                if end in quote or quote in end:  # which one is seen would depend on chunking
                    raise ValueError(
                        f"pattern {self.name!r}: end {end!r} and quote {quote!r} overlap"
                    )
        if any(c in quote for quote in self.quotes for c in "{}"):
            raise ValueError(f"pattern {self.name!r}: a quote with a brace in it")


Registry = tuple[Pattern, ...]


# ---- guardrail/registries.py: the whole module after its imports


DEFAULT_REGISTRY: Registry = (
    Pattern(
        "lfm2-tool-call",
        "span",
        "<|tool_call_start|>",
        ends=("<|tool_call_end|>",),
        source="LiquidAI LFM2 chat template; vllm vllm/tool_parsers/lfm2_tool_parser.py",
    ),
    Pattern(
        "tool-calls-token",
        "token",
        "<|tool_calls|>",
        source="LFM2-family standalone token seen in leaked answers (contract clause G6)",
    ),
    Pattern(
        "tool-call-token",
        "token",
        "<|tool_call|>",
        source="IBM Granite 3.0 / Phi-4-mini marker seen bare (vllm granite_tool_parser.py)",
    ),
)

_VLLM = "vllm vllm/tool_parsers/"

CALL_BODY = alt(
    seq(SPACE, alt(Lit("{"), Lit("["), Lit("<function="))),
    seq(Chars(r"[\r\n]", 0, 2), NAME, SPACE, alt(Lit("<arg_key>"), Lit("</tool_call>"))),
    seq(NAME, Chars("[ ]", 0, 2), Lit("{")),
    seq(NAME, Lit(" "), NAME, Lit("=")),
)
"""What follows `<tool_call>` in a real call: JSON, a list, Qwen3-Coder's `<function=`, or
GLM's name (right after the tag or on the next line: ollama's glm46 parser tests), then its
first `<arg_key>` (or the end, with no arguments); or GLM-4.7's malformed `name {json}` and
`name key=value` (mlx-lm PR #792 reads both). Prose such as `<tool_call> and </tool_call>`
fits none of them."""
JSON_BODY = seq(SPACE, alt(Lit("{"), Lit("[")))
"""A JSON object or array, after at most a few blanks."""
MISTRAL_ARGS = alt(Lit("[ARGS]"), Lit("[CALL_ID]"), Lit("{"))
"""What follows the function name in a Mistral v11+ call: its arguments, or first its id."""

HARMONY_RECIPIENT = seq(
    NAME,
    SPACE,
    alt(Lit("{"), seq(alt(seq(Lit("<|constrain|>"), NAME), NAME), SPACE, Lit("{"))),
)
"""What follows `to=` in gpt-oss's call header once a server dropped its tokens: the
recipient (`functions.get_weather`), its constraint spaced or glued (` json`, `json`, the
NAME absorbing the glued form) and the JSON arguments."""
_HARMONY_CALL_OPENERS: tuple[tuple[str, str, Boundary], ...] = (
    ("harmony-call-residue", "assistantcommentary to=", "any"),
    ("harmony-bare-call-residue", "commentary to=", "word"),
)
"""The call header's residue mid-answer, and the same as a word (the reply's first)."""
_HARMONY_CALL_RESIDUE = (
    "gpt-oss's tool-call header with its special tokens stripped, `commentary to=functions.X"
    " json{...}` (the constraint glued to the name in ggml-org/llama.cpp PR #15158)"
)

DSML_BARS = {
    "｜": "",
    "｜｜": "-doubled",
    "‖": "-u2016",
    "|": "-ascii",
    "||": "-ascii-doubled",
    " | ": "-ascii-padded",
}
"""DeepSeek's DSML bar (U+FF5C) and the spellings models mangle it into: doubled and
U+2016 (lsdefine/GenericAgent #804), ASCII (cline/cline #13348), ASCII doubled and ASCII
with a space each side (AgentFlocks/flocks PR #687)."""
_DSML_SOURCES = {
    "function_calls": f"{_VLLM}deepseekv32_tool_parser.py",
    "tool_calls": "DeepSeek V4 DSML, per sgl-project/sglang #40236 and #35736",
    "invoke": "DSML without its section wrapper, per sgl-project/sglang #40236",
    " calls": "DeepSeek V4.1 DSML, a space after the bars: vllm deepseek_v41 parser;"
    " zed-industries/zed #59503",
    " invoke": "DeepSeek V4.1 DSML without its section wrapper (zed-industries/zed #59503)",
    "calls": "DSML's `calls` section with no space: kittors/deepseek-web-api #11;"
    " diegosouzapw/OmniRoute PR #13345",
    "tool_use": "DSML's `tool_use` section: AgentFlocks/flocks PR #687",
    "toolcalls": "DSML's `tool_calls` wrapper misspelled, closed as `tool_calls` (vllm #51914;"
    " vllm tests/parser/engine/test_deepseek_v4_malformed_recovery.py)",
    **{
        f" {block}": "DSML's other blocks in V4.1's spacing, a space after the bars (the"
        " closers of every block accept both spacings; vllm deepseek_v41 parser)"
        for block in ("function_calls", "tool_calls", "tool_use")
    },
}


_DSML_CLOSED_AS = {"toolcalls": ("toolcalls", "tool_calls")}
"""The blocks whose closers also close a misspelled block."""


def _dsml_closers(block: str) -> tuple[str, ...]:
    """The closers of a DSML `block` in every bar spelling, with one slash or two, and with
    V4.1's space after the bars or without: a block opened in one spelling and closed in the
    other must not run on to the reply's end and take the answer after it with it."""
    name = block.strip()
    spellings = (block, name if block != name else f" {name}")  # its own first
    return tuple(
        f"<{slash}{b}DSML{b}{spelling}>"
        for spelling in spellings
        for slash in ("/", "//")
        for b in DSML_BARS
    )


_DSML_INVOKE = alt(
    Lit("<invoke name="), *(Lit(f"<{b}DSML{b}{s}invoke") for b in DSML_BARS for s in ("", " "))
)
"""An invoke, DSML's in any bar spelling (V4.1's space too) or with its markers stripped."""


def _dsml() -> Registry:
    """The DSML blocks in every bar spelling; a block closes in any spelling, its slash
    doubled too (`<//` before the bar, named among this year's spellings). An opener
    needs no `>`: models end it with `|` (CJackHwang/ds2api #389) or the turn ends right
    after it (earendil-works/pi #3712)."""
    return tuple(
        Pattern(
            f"deepseek-dsml-{block.strip().replace('_', '-')}{suffix}"
            + ("-v41" if block.startswith(" ") else ""),
            "span",
            f"<{bar}DSML{bar}{block}",
            ends=tuple(
                c for name in _DSML_CLOSED_AS.get(block, (block,)) for c in _dsml_closers(name)
            ),
            source=_DSML_SOURCES[block]
            + (
                "" if not suffix else "; bar variants: GenericAgent #804, cline #13348, flocks #687"
            ),
        )
        for block in _DSML_SOURCES
        for bar, suffix in DSML_BARS.items()
    )


def _dsml_stray_closers() -> Registry:
    """A DSML closer with no block open (its opener lost, vllm
    tests/parser/engine/test_deepseek_v4_malformed_recovery.py): the tag alone, in every bar
    spelling and slash, any block's name. For DeepSeek names only (its end is a bare `>`)."""
    return tuple(
        Pattern(
            f"deepseek-dsml-stray-closer{suffix}{'-double-slash' if slash == '//' else ''}",
            "span",
            f"<{slash}{bar}DSML{bar}",
            ends=(">",),
            special=False,
            hint=seq(Chars("[ ]", 0, 2), NAME, Lit(">")),
            source="a DSML closer whose block never opened: vllm"
            " tests/parser/engine/test_deepseek_v4_malformed_recovery.py (missing start wrapper)",
        )
        for bar, suffix in DSML_BARS.items()
        for slash in ("/", "//")
    )


_DEEPSEEK_SEPS = {"": "▁", "-underscore": "_", "-space": " ", "-escaped": "\\_"}
"""DeepSeek's word separator (U+2581) and DeepSeek-R1-Distill's mangled ones, which
llama.cpp's parser accepts."""
_DEEPSEEK_BARS = {"": "｜", "-ascii": "|"}
"""DeepSeek's bar (U+FF5C) and the ASCII one models and servers write in its place
(MoonshotAI kimi-code PR #798 reads both)."""


def _deepseek_closers(word: str) -> tuple[str, ...]:
    """The ends of a DeepSeek `word` section (`calls`, `call`): in every separator and bar,
    so a section opened in one spelling and closed in another ends there."""
    return tuple(
        f"<{bar}tool{sep}{word}{sep}end{bar}>"
        for bar in _DEEPSEEK_BARS.values()
        for sep in _DEEPSEEK_SEPS.values()
    )


def _deepseek() -> Registry:
    """DeepSeek V3 to V3.1's section and call tokens in every separator and bar spelling.
    The ASCII call token with `_` is Kimi K2's `<|tool_call_begin|>` (its own profile)."""
    mangled = "ggml-org/llama.cpp common/chat.cpp (DeepSeek-R1-Distill variants)"
    ascii_bar = "; ASCII bars: MoonshotAI kimi-code PR #798"
    return (
        *(
            Pattern(
                f"deepseek-tool-calls{name}{bar_name}",
                "span",
                f"<{bar}tool{sep}calls{sep}begin{bar}>",
                ends=_deepseek_closers("calls"),
                json_strings="always",
                source=(
                    f"{_VLLM}deepseekv3_tool_parser.py; google/adk-python PR #5654"
                    if not name
                    else mangled
                )
                + (ascii_bar if bar_name else ""),
            )
            for name, sep in _DEEPSEEK_SEPS.items()
            for bar_name, bar in _DEEPSEEK_BARS.items()
        ),
        *(
            Pattern(
                f"deepseek-tool-call{bar_name}",
                "span",
                f"<{bar}tool▁call▁begin{bar}>",
                ends=_deepseek_closers("call"),
                json_strings="always",
                source=f"{_VLLM}deepseekv31_tool_parser.py" + (ascii_bar if bar_name else ""),
            )
            for bar_name, bar in _DEEPSEEK_BARS.items()
        ),
        *(
            Pattern(
                f"deepseek-tool-calls-short{bar_name}",
                "span",
                f"<{bar}tool▁calls{bar}>",
                ends=_deepseek_closers("calls"),
                json_strings="always",
                source=mangled + (ascii_bar if bar_name else ""),
            )
            for bar_name, bar in _DEEPSEEK_BARS.items()
        ),
    )


def _deepseek_turn_tokens() -> Registry:
    """The tokens around a DeepSeek call that are not the call: a tool's output the model
    wrote itself (the markers go, its text stays, as ollama's parser does) and the end of
    the turn."""
    tokens = {
        "tool-output-begin": "<｜tool▁output▁begin｜>",
        "tool-output-end": "<｜tool▁output▁end｜>",
        "tool-outputs-begin": "<｜tool▁outputs▁begin｜>",
        "tool-outputs-end": "<｜tool▁outputs▁end｜>",
        "end-of-sentence": "<｜end▁of▁sentence｜>",
    }
    return tuple(
        Pattern(
            f"deepseek-{name}",
            "token",
            token,
            source="DeepSeek V3 chat template (tool outputs, the turn's end); ollama"
            " model/parsers/deepseek3_test.go (tool_output markers stripped, text kept);"
            " vllm #21727",
        )
        for name, token in tokens.items()
    )


_LLAMA_CPP_HERMES = (
    "ggml-org/llama.cpp tests/test-chat.cpp (COMMON_CHAT_FORMAT_HERMES_2_PRO: what its parser"
    " accepts from Qwen 2.5/3 and Hermes)"
)
CALL_JSON = seq(SPACE, Lit("{"), Chars(r"[ \t\r\n]", 0, 16), alt(Lit('"name"'), Lit('"arguments"')))
"""A JSON call object's start: `{"name"` (or Hermes 2 Pro's `{"arguments"` first), its key
on the next line indented as far as a pretty-printer puts it."""

FUNCTION_TAG = Pattern(
    "qwen3-coder-function",
    "span",
    "<function=",
    ends=("</function>",),
    special=False,
    hint=seq(NAME, Lit(">"), SPACE, alt(Lit("<parameter="), Lit("</function>"), Lit("{"))),
    trailers=("</tool_call>",),
    source=f"{_VLLM}qwen3coder_tool_parser.py; bare, ending in </tool_call>: ollama/ollama"
    " #16686; with a JSON body as function-json-tag",
)
"""`<function=NAME>`, then Qwen3-Coder's `<parameter=` or a JSON body (the `qwen3-coder`
profile's, a superset of FUNCTION_JSON_TAG, which it replaces in a registry with both)."""
FUNCTION_JSON_TAG = Pattern(
    "function-json-tag",
    "span",
    "<function=",
    ends=("</function>",),
    special=False,
    hint=seq(NAME, Lit(">"), JSON_BODY),
    source=f"{_LLAMA_CPP_HERMES}; Functionary v3.1 and Meta llama-models"
    " models/llama3_1/prompt_format.md (Llama 3.1's custom tool format)",
)
"""`<function=NAME>` and a JSON body, not Qwen3-Coder's XML: for the families whose engines
read it, which do not write that XML (a Qwen3-Coder call inside Seed-OSS's wrapper stays
whole for them)."""
FUNCTION_NAME_TAG = Pattern(
    "function-name-tag",
    "span",
    "<function name=",
    ends=("</function>",),
    special=False,
    hint=seq(Lit('"'), NAME, Lit('">'), JSON_BODY),
    json_strings="always",
    source=_LLAMA_CPP_HERMES,
)
"""`<function name="NAME">` and a JSON body."""


def _hermes_wrappers() -> Registry:
    """The other tags llama.cpp's Hermes 2 Pro parser reads a JSON call from."""
    return tuple(
        Pattern(
            f"hermes-{tag.replace('_', '-')}-wrapper",
            "span",
            f"<{tag}>",
            ends=(f"</{tag}>",),
            special=False,
            hint=CALL_JSON,
            json_strings="always",
            source=_LLAMA_CPP_HERMES,
        )
        for tag in ("tool", "tools", "response", "json", "JSON", "xml", "function_call")
    )


PROFILES: dict[str, Registry] = {
    "hermes": (
        Pattern(
            "hermes-tool-call",
            "span",
            "<tool_call>",
            ends=("</tool_call>",),
            special=False,
            hint=CALL_BODY,
            json_strings="leading",
            source=f"{_VLLM}hermes_tool_parser.py (Hermes, Qwen2.5/3, Granite 4, GLM-4.5+)",
        ),
        *_hermes_wrappers(),
        FUNCTION_JSON_TAG,
        FUNCTION_NAME_TAG,
    ),
    "function-tag": (FUNCTION_JSON_TAG, FUNCTION_NAME_TAG),
    "qwen3-coder": (FUNCTION_TAG,),  # after the two above: its `<function=` is the wider one
    "mistral": (
        Pattern(
            "mistral-tool-calls",
            "json_value",
            "[TOOL_CALLS]",
            special=False,
            hint=seq(SPACE, alt(Lit("["), Lit("{"), seq(NAME, SPACE, MISTRAL_ARGS))),
            skips=("[ARGS]", "[CALL_ID]"),
            trailers=("</s>",),
            source=f"{_VLLM}mistral_tool_parser.py and its tests (no end marker: the call ends"
            " with its JSON; mlx-lm PR #1448); `[CALL_ID]`: llama.cpp tests/test-chat.cpp"
            " (Mistral Small 3.2); the `</s>` its chat template ends a call's turn with goes"
            " with it (HTML's strikethrough closes with `</s>` too: only after a call)",
        ),
    ),
    "turn-ends": (
        Pattern(
            "chatml-turn-end",
            "token",
            "<|im_end|>",
            source="ChatML's turn end, after a call in LFM2's, Qwen's and Kimi K2's chat"
            " templates, passed on by a server that keeps special tokens",
        ),
        Pattern(
            "end-of-text",
            "token",
            "<|endoftext|>",
            source="the end-of-text token of Qwen's and GLM's tokenizers, after a call's turn"
            " as their templates render it",
        ),
    ),
    "deepseek": (*_deepseek(), *_dsml(), *_deepseek_turn_tokens()),
    "deepseek-xml": (
        *_dsml_stray_closers(),
        Pattern(
            "deepseek-bare-function-calls",
            "span",
            "<function_calls>",
            ends=("</function_calls>",),
            special=False,
            hint=seq(SPACE, Lit("<invoke name=")),
            source="DSML with its markers stripped: sglang deepseekv32_detector.py"
            ' ("Format 3 - Without DSML tags")',
        ),
        *(
            Pattern(
                name,
                "span",
                opener,
                ends=("</calls>", *_dsml_closers("calls")),
                special=False,
                hint=seq(SPACE, _DSML_INVOKE),
                source=source,
            )
            for name, opener, source in (
                (
                    "deepseek-bare-calls",
                    "<calls>",
                    "DSML's `calls` section with its markers stripped:"
                    " diegosouzapw/OmniRoute PR #13345",
                ),
                (
                    "deepseek-lost-bars-calls",
                    "< calls>",
                    "V4.1's `calls` opener that lost its bars and DSML, the invokes inside"
                    " still DSML: kittors/deepseek-web-api #11",
                ),
            )
        ),
        Pattern(
            "deepseek-bare-invoke",
            "span",
            "<invoke name=",
            ends=("</invoke>",),
            special=False,
            hint=seq(
                Lit('"'),
                NAME,
                Lit('">'),
                SPACE,
                alt(Lit("<parameter name="), Lit("</invoke>"), Lit("{")),
            ),
            source="DeepSeek V4 Flash's invoke with no DSML and no wrapper, from the official"
            " API: anomalyco/opencode #34676; sglang deepseekv32_detector.py (Format 4: JSON)",
        ),
    ),
    "harmony": (
        Pattern(
            "harmony-messages",
            "harmony",
            "<|channel|>",
            source="openai/harmony docs/format.md and its parser tests; llama.cpp"
            " tests/test-chat.cpp (GPT-OSS); sglang test/srt/test_harmony_parser.py;"
            f" {_VLLM}openai_tool_parser.py; TensorRT-LLM #9256; odysseus PR #4523",
        ),
    ),
    "harmony-residue": (
        Pattern(
            "harmony-analysis-residue",
            "span",
            "analysis",
            ends=("assistantfinal",),
            special=False,
            hint=Chars("[A-Z]", 1, 1),
            boundary="start",
            reasoning=True,
            source="gpt-oss with its special tokens stripped: Augustas11/macprovider #743;"
            " sglang test/srt/test_harmony_parser.py (test_parse_analysis_no_space_after_header)",
        ),
        *(
            Pattern(
                name,
                "json_value",
                opener,
                special=False,
                hint=HARMONY_RECIPIENT,
                boundary=boundary,
                trailers=("assistantfinal",),
                source=_HARMONY_CALL_RESIDUE,
            )
            for name, opener, boundary in _HARMONY_CALL_OPENERS
        ),
        Pattern(
            "harmony-next-analysis-residue",
            "span",
            "assistantanalysis",
            ends=("assistantfinal",),
            special=False,
            hint=Chars("[A-Z]", 1, 1),
            reasoning=True,
            source="gpt-oss's later analysis message with its tokens stripped, after a call:"
            " sglang python/sglang/srt/parser/harmony_parser.py (TextStrategy)",
        ),
        Pattern(
            "harmony-final-residue",
            "token",
            "assistantfinal",
            special=False,
            boundary="start",
            source="gpt-oss's final header with its tokens stripped, opening the reply: sglang"
            " python/sglang/srt/parser/harmony_parser.py (TextStrategy)",
        ),
    ),
    "llama": (
        Pattern(
            "llama3-python-tag",
            "span",
            "<|python_tag|>",
            ends=("<|eom_id|>", "<|eot_id|>"),
            json_strings="leading",
            source=f"{_VLLM}llama_tool_parser.py; exo PR #1588 (often EOS-terminated)",
        ),
        Pattern(
            "llama4-python",
            "span",
            "<|python_start|>",
            ends=("<|python_end|>",),
            source=f"{_VLLM}llama4_pythonic_tool_parser.py",
        ),
        *(
            Pattern(
                f"llama-end-{name}",
                "token",
                token,
                source="Meta llama-models models/llama3_1/prompt_format.md, llama3_2 and llama4"
                " (a call reply ends `<|eom_id|>` or `<|eot_id|>`; Llama 4's `<|eom|>`,"
                " `<|eot|>`), passed on by a server that keeps special tokens",
            )
            for name, token in (
                ("eot-id", "<|eot_id|>"),
                ("eom-id", "<|eom_id|>"),
                ("eot", "<|eot|>"),
                ("eom", "<|eom|>"),
            )
        ),
    ),
    "llama-json": (
        Pattern(
            "llama3-json-reply",
            "json_reply",
            "{",
            special=False,
            source="Meta llama-models models/llama3_1/prompt_format.md (JSON calls, joined by"
            f" '; '); {_VLLM}llama_tool_parser.py and its tests (llama3_json)",
        ),
    ),
    "llama-pythonic": (
        Pattern(
            "llama-pythonic-reply",
            "pythonic_reply",
            "[",
            special=False,
            source="Meta llama-models models/llama3_2 and llama4 prompt formats ([func(a=1), ...]"
            f" as the whole reply); {_VLLM}pythonic_tool_parser.py, llama4_pythonic_tool_parser.py"
            " and their tests",
        ),
    ),
    "kimi": (
        Pattern(
            "kimi-tool-calls-section",
            "span",
            "<|tool_calls_section_begin|>",
            ends=("<|tool_calls_section_end|>", "<|tool_call_section_end|>"),
            json_strings="always",
            source=f"{_VLLM}kimi_k2_tool_parser.py; MoonshotAI/Kimi-K2 #26",
        ),
        Pattern(
            "kimi-tool-call-section",
            "span",
            "<|tool_call_section_begin|>",
            ends=("<|tool_call_section_end|>", "<|tool_calls_section_end|>"),
            json_strings="always",
            source="Kimi K2's singular section token: ggml-org/llama.cpp PR #17376 (review)",
        ),
        Pattern(
            "kimi-tool-call-arguments",
            "span",
            "<|tool_call_argument_begin|>",
            ends=("<|tool_call_end|>", "<|tool_calls_section_end|>", "<|tool_call_section_end|>"),
            json_strings="always",
            source="Kimi K2's arguments with their section and call tokens lost, leaked through"
            " Fireworks: typeclaw/typeclaw PR #344 (the call's `name:0` before them stays)",
        ),
        Pattern(
            "kimi-tool-call",
            "span",
            "<|tool_call_begin|>",
            ends=("<|tool_call_end|>",),
            json_strings="always",
            source=f"{_VLLM}kimi_k2_tool_parser.py; vllm PR #31207",
        ),
        Pattern(
            "kimi-k3-tools",
            "span",
            "<|open|>tools<|sep|>",
            ends=("<|close|>tools<|sep|>",),
            source="vllm vllm/frontend/processing/tool_parsers/kimi_k3_tool_parser.py;"
            " sglang python/sglang/srt/function_call/kimik3_format.py",
        ),
        Pattern(
            "kimi-k3-message-close",
            "token",
            "<|close|>message<|sep|>",
            source="vllm tests/tool_parsers/test_kimi_k3_tool_parser.py"
            " (test_streaming_content_holds_split_message_close)",
        ),
        *(
            Pattern(
                f"kimi-k3-response-{edge}",
                "token",
                f"<|{edge}|>response<|sep|>",
                source="vllm PR #51400 (response_open, response_close and message_close"
                " stripped from content); NousResearch/hermes-agent #73491",
            )
            for edge in ("open", "close")
        ),
        Pattern(
            "kimi-k3-call",
            "span",
            "<|open|>call",
            ends=("<|close|>call<|sep|>",),
            hint=Lit(' tool="'),
            source="Kimi K3's call without its tools section: sglang"
            " test/srt/test_kimik3_detector.py (test_markers_only_strip_keeps_reasoning_text);"
            " `<|open|>call` with no attributes is shown (test_quoted_call_token_without_"
            "attributes_survives)",
        ),
        Pattern(
            "kimi-k3-end-of-message",
            "token",
            "<|end_of_msg|>",
            source="Kimi K3's chat template ends every message"
            " `<|close|>message<|sep|><|end_of_msg|>` (ggml-org/llama.cpp"
            " models/templates/Kimi-K3.jinja)",
        ),
        Pattern(
            "kimi-k3-think",
            "span",
            "<|open|>think<|sep|>",
            ends=("<|close|>think",),
            trailers=("<|sep|>",),
            reasoning=True,
            source="Kimi K3's thinking channel in content (sgl-project/sglang PR #32567): its"
            " body is reasoning, never the answer",
        ),
        Pattern(
            "kimi-k3-think-close",
            "token",
            "<|close|>think",
            trailers=("<|sep|>",),
            source="Kimi K3's thinking close with its opener in the prompt (sgl-project/sglang"
            " PR #32567: raw output of a live server)",
        ),
    ),
    "minimax": (
        Pattern(
            "minimax-m2-tool-call",
            "span",
            "<minimax:tool_call>",
            ends=("</minimax:tool_call>",),
            special=False,
            hint=seq(SPACE, Lit("<invoke")),
            source=f"{_VLLM}minimax_m2_tool_parser.py; earendil-works/pi #368; "
            "MiniMax-AI/MiniMax-M2.5 #10",
        ),
        Pattern(
            "minimax-bracket-tool-call",
            "span",
            "[TOOL_CALL]",
            ends=("[/TOOL_CALL]",),
            special=False,
            hint=seq(SPACE, Lit("{")),
            json_strings="leading",
            source="MiniMax-M2 variant: lmstudio-ai/lmstudio-bug-tracker #1177",
        ),
        Pattern(
            "minimax-m3-tool-call",
            "span",
            "]<]minimax[>[",  # the token alone: Hermes' `<tool_call>` after it is an opener too
            ends=("]<]minimax[>[</tool_call>",),
            hint=Lit("<tool_call>"),
            source="llama.cpp tests/test-chat.cpp (MiniMax-M3 tests) and"
            " models/templates/MiniMax-M3.jinja: every tag behind the `]<]minimax[>[` token",
        ),
    ),
    "minimax-m1": (
        Pattern(
            "minimax-m1-tool-calls",
            "span",
            "<tool_calls>",
            ends=("</tool_calls>",),
            special=False,
            hint=JSON_BODY,
            json_strings="leading",
            source=f"{_VLLM}minimax_tool_parser.py, jamba_tool_parser.py",
        ),
    ),
    "internlm": (
        Pattern(
            "internlm-action",
            "span",
            "<|action_start|>",
            ends=("<|action_end|>",),
            json_strings="always",
            source=f"{_VLLM}internlm2_tool_parser.py",
        ),
    ),
    "cohere": (
        Pattern(
            "cohere-action",
            "span",
            "<|START_ACTION|>",
            ends=("<|END_ACTION|>",),
            json_strings="always",
            source=f"{_VLLM}command_tool_parser.py",
        ),
    ),
    "gemma": (
        Pattern(
            "gemma4-tool-call",
            "span",
            "<|tool_call>",
            ends=("<tool_call|>", "<turn|>"),
            quotes=('<|"|>',),
            source=f"{_VLLM}gemma4_tool_parser.py; closed by the turn's end:"
            " vllm tests/tool_parsers/test_gemma4_regex_and_bare_calls.py; strings between"
            ' `<|"|>` quotes, as its chat template writes arguments (a quoted closer is data)',
        ),
        Pattern(
            "gemma4-thought",
            "span",
            "<|channel>thought",
            ends=("<channel|>",),
            reasoning=True,
            source="Gemma 4's thinking channel (its chat template: `<|channel>thought` ..."
            " `<channel|>`; vllm's gemma4 reasoning parser): its body is reasoning, never the"
            " answer",
        ),
        Pattern(
            "gemma4-stray-channel-close",
            "token",
            "<channel|>",
            source="Gemma 4's channel closer with no channel open: llama.cpp tests/test-chat.cpp"
            " (Gemma 4 edge cases: `Hello...<channel|>` is the message alone)",
        ),
        Pattern(
            "gemma4-turn-end",
            "token",
            "<turn|>",
            source="Gemma 4's turn end after a call (its chat template), passed on by a server"
            " that keeps special tokens",
        ),
        Pattern(
            "gemma4-stray-call-close",
            "token",
            "<tool_call|>",
            source="Gemma 4's call closer with no call open: ollama model/parsers/gemma4_test.go"
            " (extra close tags)",
        ),
        Pattern(
            "gemma4-tool-response",
            "span",
            "<|tool_response>",
            ends=("<tool_response|>",),
            quotes=('<|"|>',),
            source="Gemma 4's tool response written by the model after its call, a stop token a"
            " server passed on (ollama model/parsers/gemma4_test.go,"
            " IgnoresToolResponseBoundaryAfterToolCall): a made-up result, not the answer",
        ),
    ),
    "gemma-plain": (
        Pattern(
            "functiongemma-call",
            "span",
            "<start_function_call>",
            ends=("<end_function_call>",),
            special=False,
            quotes=("<escape>",),
            source="vllm .../functiongemma_tool_parser.py (strings between `<escape>` quotes)",
        ),
        Pattern(
            "gemma-bare-call",
            "braced",
            "call:",
            special=False,
            hint=seq(NAME, Lit("{"), Chars("[A-Za-z_}]", 1, 1)),
            boundary="word",
            quotes=('<|"|>', "<escape>"),
            source="Gemma 4 / FunctionGemma body without its wrapper tokens: vllm PR #45832, "
            "Gitlawb/openclaude PR #380",
        ),
        Pattern(
            "functiongemma-response",
            "span",
            "<start_function_response>",
            ends=("<end_function_response>",),
            special=False,
            quotes=("<escape>",),
            source="FunctionGemma's function response written by the model after its call (its"
            " docs: `<start_function_response>` is an extra stop sequence): a made-up result",
        ),
        Pattern(
            "gemma-end-of-turn",
            "token",
            "<end_of_turn>",
            source="Gemma 3's turn end (its chat template), passed on by a server that keeps"
            " special tokens",
        ),
    ),
    "seed-oss": (
        Pattern(
            "seed-oss-tool-call",
            "span",
            "<seed:tool_call>",
            ends=("</seed:tool_call>",),
            special=False,
            hint=seq(SPACE, Lit("<function=")),
            source=f"{_VLLM}seed_oss_tool_parser.py",
        ),
    ),
    "nemotron": (
        Pattern(
            "nemotron-toolcall",
            "span",
            "<TOOLCALL>",
            ends=("</TOOLCALL>",),
            special=False,
            hint=JSON_BODY,
            json_strings="leading",
            source=f"{_VLLM}nemotron_json_tool_parser.py",
        ),
    ),
    "glm": (
        Pattern(
            "glm-user",
            "token",
            "<|user|>",
            source="GLM-4.5+ chat templates: the next turn's header after an answer, one of its"
            " stop tokens (ggml-org/llama.cpp models/templates/glm_4_5.jinja, GLM-4.6.jinja)",
        ),
        Pattern(
            "glm-observation",
            "token",
            "<|observation|>",
            source="GLM-4.5+ chat template (a call turn ends `<|observation|>`, the token the"
            " model stops on); a GLM-4.5 parser test of real output",
        ),
        Pattern(
            "glm-bare-arguments",
            "span",
            "<arg_key>",
            ends=("</arg_value>",),
            special=False,
            hint=seq(Chars("[^<>\n]", 1, 64), Lit("</arg_key>"), SPACE, Lit("<arg_value>")),
            source="GLM-5 key/value pairs outside <tool_call>: zai-org/GLM-5 #84; "
            f"{_VLLM}glm4_moe_tool_parser.py",
        ),
    ),
    "echo": (
        Pattern(
            "transcript-echo",
            "span",
            "[Calling tool:",
            ends=(")]",),
            special=False,
            hint=seq(Chars("[ ]", 0, 2), NAME, Lit("(")),
            source="a model imitating its transcript: raullenchai/Rapid-MLX PR #1592, PR #102",
        ),
    ),
}

OPT_IN: tuple[str, ...] = ("echo",)
"""Profiles only a named setting turns on: never `auto`, never `all`."""


def registry_with(*profiles: str, base: Registry = DEFAULT_REGISTRY) -> Registry:
    """`base` plus the named profiles. A later pattern with the same opener replaces one:
    profiles are applied in PROFILES' order, whatever order they are named in, so that
    `qwen3-coder`'s `<function=` always wins over the narrower one of `hermes` and
    `function-tag`."""
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        raise ValueError(f"unknown profile(s) {', '.join(unknown)}; known: {', '.join(PROFILES)}")
    by_start = {pattern.start: pattern for pattern in base}
    for name in (p for p in PROFILES if p in profiles):
        by_start.update((pattern.start, pattern) for pattern in PROFILES[name])
    return tuple(by_start.values())


# ---- guardrail/model_profiles.py: the whole module after its imports


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


# ---- guardrail/code_context.py: the whole module after its imports


HEAD_CHARS = 64
"""How much of a line is read to tell whether it is a fence line."""


class CodeContext:
    """Whether the text so far ends inside code: a fenced block (``` or ~~~ lines) or an
    inline code span on the current line (a run of backticks up to the next run of the
    same length). A run of backticks at the end of the text counts as ended: what comes next
    is read after it."""

    __slots__ = (
        "char",
        "decided",
        "fence_line",
        "fenced",
        "head",
        "opening",
        "run",
        "tick",
        "width",
    )

    def __init__(self) -> None:
        self.fenced = False
        self.char = ""
        self.width = 0  # the open block's fence run
        self.opening = False  # the current line opens the block, its run not ended yet
        self.head = ""
        self.decided = False
        self.fence_line = False  # the current line opens or closes a fenced block
        self.tick = 0  # the backtick run that opened the line's inline code span, if any
        self.run = 0  # a backtick run at the end of the text, not ended yet

    def copy(self) -> CodeContext:
        twin = CodeContext()
        for name in CodeContext.__slots__:
            setattr(twin, name, getattr(self, name))
        return twin

    @property
    def open(self) -> bool:
        return self.fenced or _ticked(self.tick, self.run) > 0

    def feed(self, text: str) -> None:
        lines = text.split("\n")
        for index, piece in enumerate(lines):
            if index:
                self.head, self.decided, self.fence_line, self.opening = "", False, False, False
                self.tick, self.run = 0, 0
            if not self.decided:
                self.head = (self.head + piece)[:HEAD_CHARS]
                self._decide(complete=index < len(lines) - 1)
            if self.fence_line:
                continue  # a fence line's backticks open or close a block, not a span
            if "`" in piece:
                self._ticks(piece)
            elif piece and self.run:
                self.tick, self.run = _ticked(self.tick, self.run), 0

    def _ticks(self, piece: str) -> None:
        for run in _BACKTICKS.finditer(piece):
            if run.start() or not self.run:  # text came between: the pending run ended
                self.tick, self.run = _ticked(self.tick, self.run), 0
            self.run += run.end() - run.start()
            if run.end() < len(piece):
                self.tick, self.run = _ticked(self.tick, self.run), 0

    def _decide(self, complete: bool) -> None:
        """Whether the line read so far (its first HEAD_CHARS) opens or closes a fenced block,
        as CommonMark has it: an opening run of three or more backticks or tildes, decided once
        the run has ended; a closing run of the same character, at least as long, with nothing
        but blanks after it on its line (a shorter run, or one with text after it, is the
        block's content: vllm tests/parser/engine/test_qwen3_fenced_examples.py)."""
        body = self.head.lstrip(" ")
        if len(self.head) - len(body) > 3:
            self.decided = True
            return
        char = body[:1]
        run = len(body) - len(body.lstrip(char)) if char in ("`", "~") else 0
        if run < 3:
            if complete or len(body) > run:
                self.decided = True
            return
        if not self.fenced or self.opening:
            # an opening line is in code from its third run character on; the run's width,
            # which a closing line must reach, is known once the run has ended
            self.fence_line, self.tick, self.run = True, 0, 0
            self.fenced, self.char, self.width, self.opening = True, char, run, True
            if complete or len(body) > run:
                self.decided, self.opening = True, False
            return
        if len(body) == run and not complete:
            return  # the run may go on
        if char != self.char or run < self.width or body[run:].strip(" \t"):
            self.decided = True  # the block's content
        elif complete:
            self.decided, self.fence_line, self.tick, self.run = True, True, 0, 0
            self.fenced = False
        elif len(self.head) >= HEAD_CHARS:
            self.decided = True  # blanks past what is read: taken as content


_BACKTICKS = re.compile("`+")


def _ticked(tick: int, run: int) -> int:
    """The inline code span's opening run after a run of `run` backticks ended."""
    if not run:
        return tick
    if not tick:
        return run
    return 0 if run == tick else tick


# ---- guardrail/json_reply.py: the whole module after its imports


HOLD_LIMIT = 16_384
"""The longest reply held back while it may still be nothing but calls."""
CALL_KEYS = frozenset({"name", "parameters", "arguments", "type"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}\Z")

Reading = Literal["maybe", "no"]
REPLY_TRAILERS = (
    "<|eot_id|>",
    "<|eom_id|>",
    "<|eot|>",
    "<|eom|>",
    "<|end_of_text|>",
    "<|im_end|>",
    "<end_of_turn>",
    "</tool_call>",
)
"""What may follow a whole reply of calls and still leave it nothing but calls: the tokens
that end a turn, and a stray closer."""


def is_call(obj: object) -> bool:
    """Whether a parsed JSON value is one call as Llama writes it."""
    if not is_object(obj) or not set(obj) <= CALL_KEYS or "name" not in obj:
        return False
    args = [obj[key] for key in ("parameters", "arguments") if key in obj]
    name = obj["name"]
    return (
        len(args) == 1
        and is_object(args[0])
        and isinstance(name, str)
        and _NAME.match(name) is not None
        and obj.get("type", "function") == "function"
    )


class CharReader:
    """The part every reader of a whole reply shares: the reply kept as it comes, at most
    HOLD_LIMIT characters, read one character at a time by `_read` until it says the reply
    can no longer be calls; `feed` says whether it may still be ("maybe") or not ("no",
    final: the text is an answer)."""

    __slots__ = ("_calls", "_trailed", "_trailer", "_verdict", "text")

    def __init__(self) -> None:
        self.text = ""
        self._verdict: Reading = "maybe"
        self._calls = 0
        self._trailer = ""  # a trailer begun after the calls, not yet whole
        self._trailed = False  # a whole trailer came: blanks and trailers only from here

    @property
    def calls(self) -> int:
        """The calls read whole so far."""
        return self._calls

    def feed(self, chunk: str) -> Reading:
        if self._verdict == "no":
            return "no"
        at = len(self.text)
        self.text += chunk
        if len(self.text) > HOLD_LIMIT:
            self._verdict = "no"
            return "no"
        for index in range(at, len(self.text)):
            char = self.text[index]
            if self._trailer or (char == "<" and self._ended()):
                read = self._read_trailer(char)
            elif self._trailed:
                read = char in BLANKS
            else:
                read = self._read(char, index)
            if not read:
                self._verdict = "no"
                break
        return self._verdict

    def _read_trailer(self, char: str) -> bool:
        self._trailer += char
        if self._trailer in REPLY_TRAILERS:
            self._trailer, self._trailed = "", True
            return True
        return any(trailer.startswith(self._trailer) for trailer in REPLY_TRAILERS)

    def finished(self) -> bool:
        """Whether the reply read so far ends as nothing but calls can (no trailer half
        read)."""
        return self._verdict == "maybe" and self._calls > 0 and not self._trailer

    def _ended(self) -> bool:
        """Whether the calls read so far are closed, so a trailer may follow them."""
        raise NotImplementedError

    def _read(self, char: str, index: int) -> bool:
        """Read one character; False when the reply can no longer be only calls."""
        raise NotImplementedError


class ReplyCalls(CharReader):
    """Reads a reply of JSON calls from its start (CharReader); `complete()` at the end
    says whether it is nothing but such calls."""

    __slots__ = ("_depth", "_escaped", "_in_string", "_object_at")

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._object_at = 0

    def complete(self) -> bool:
        """At the reply's end: whether all of it is calls (at least one, none left open)."""
        return self.finished() and self._depth == 0

    def _ended(self) -> bool:
        return self._calls > 0 and self._depth == 0

    def _read(self, char: str, index: int) -> bool:
        """Read one character; False when the reply can no longer be only calls."""
        if self._depth == 0:  # between calls: blanks, `;`, or the next call's `{`
            if char == "{":
                self._depth, self._object_at = 1, index
                return True
            return char in BLANKS or (char == ";" and self._calls > 0)
        if self._in_string:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
            return True
        if char == '"':
            self._in_string = True
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            if self._depth == 0:
                return self._closed(self.text[self._object_at : index + 1])
        return True

    def _closed(self, obj: str) -> bool:
        try:
            parsed: object = json.loads(obj)
        except ValueError:
            return False
        if not is_call(parsed):
            return False
        self._calls += 1
        return True


# ---- guardrail/pythonic_reply.py: the whole module after its imports


State = Literal["start", "name", "in_name", "paren", "args", "after", "done"]
BUILT_IN_CALLS = frozenset({"brave_search.call", "wolfram_alpha.call"})
"""Llama 3.1's built-in tools, which it calls after `<|python_tag|>` with no list around the
call (Meta's llama3_1 prompt format): a server that drops special tokens leaves the call
alone as the whole reply. Only these names count without brackets: a bare `f(x=1)` is what
an answer about code shows."""
_NAME_START = re.compile(r"[A-Za-z_]")
_NAME_CHAR = re.compile(r"[A-Za-z0-9_.]")
NAME_LIMIT = 64
_OPENERS, _CLOSERS = "([{", ")]}"


def is_pythonic_call(source: str) -> bool:
    """Whether `source` is one call as the pythonic format writes it: a (dotted) name and
    keyword arguments whose values are literals."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    call = tree.body
    if not isinstance(call, ast.Call) or call.args or not _is_name(call.func):
        return False
    for keyword in call.keywords:
        if keyword.arg is None:  # **kwargs
            return False
        try:
            ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return False
    return True


def _is_name(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


class PythonicCalls(CharReader):
    """Reads a reply from its start, as json_reply.ReplyCalls does (CharReader); `complete()`
    at the end says whether it is nothing but a closed list of calls."""

    __slots__ = ("_bare", "_call_at", "_depth", "_escaped", "_name", "_quote", "_state")

    def __init__(self) -> None:
        super().__init__()
        self._bare = False  # the reply is one built-in call with no list around it
        self._state: State = "start"
        self._name = 0  # the current name's length
        self._depth = 0  # brackets open inside the current call's parentheses
        self._quote = ""  # the quote a string inside the call is in, if any
        self._escaped = False
        self._call_at = 0

    def complete(self) -> bool:
        """At the reply's end: whether all of it is a closed list of calls."""
        return self.finished() and self._state == "done"

    def _ended(self) -> bool:
        return self._state == "done"

    def _read(self, char: str, index: int) -> bool:
        """Read one character; False when the reply can no longer be only calls."""
        state = self._state
        if state == "args":
            return self._read_args(char, index)
        if state in ("start", "done"):
            if char in BLANKS:
                return True
            if state == "start" and any(name.startswith(char) for name in BUILT_IN_CALLS):
                self._bare = True  # a built-in call's name, or nothing that counts
                self._state = "name"
                return self._read(char, index)
            if state == "done" or char != "[":
                return False
            self._state = "name"
            return True
        if state == "name":
            if char in BLANKS:
                return True
            if _NAME_START.match(char) is None:
                return False
            self._state, self._name, self._call_at = "in_name", 1, index
            return True
        if state == "in_name":
            if _NAME_CHAR.match(char) is not None:
                self._name += 1
                if self._bare:  # decided at the first letter no built-in name has
                    name = self.text[self._call_at : index + 1]
                    return any(built_in.startswith(name) for built_in in BUILT_IN_CALLS)
                return self._name <= NAME_LIMIT
            self._state = "paren"
            return self._read(char, index)
        if state == "paren":
            if char in BLANKS:
                return True
            if char != "(":
                return False
            if self._bare and self.text[self._call_at : index].strip() not in BUILT_IN_CALLS:
                return False
            self._state, self._depth = "args", 1
            return True
        # after a call: more calls, or the list's end
        if char in BLANKS:
            return True
        if char == ",":
            self._state = "name"
            return True
        if char == "]":
            self._state = "done"
            return True
        return False

    def _read_args(self, char: str, index: int) -> bool:
        """Inside a call's parentheses: strings and brackets, until they close."""
        if self._quote:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == self._quote:
                self._quote = ""
            return True
        if char in "'\"":
            self._quote = char
        elif char in _OPENERS:
            self._depth += 1
        elif char in _CLOSERS:
            self._depth -= 1
            if self._depth == 0:
                self._state = "done" if self._bare else "after"
                if not is_pythonic_call(self.text[self._call_at : index + 1]):
                    return False
                self._calls += 1
        return True


# ---- guardrail/reply_calls.py: the whole module after its imports


WHOLE_REPLY_KINDS = ("json_reply", "pythonic_reply")


class CallReply(Protocol):
    """A reader of a reply that may be nothing but calls."""

    @property
    def text(self) -> str: ...

    @property
    def calls(self) -> int: ...

    def feed(self, chunk: str) -> Reading: ...

    def complete(self) -> bool: ...


class EitherReply:
    """One reply read by several readers: "maybe" while any of them may still be calls,
    complete when one is."""

    __slots__ = ("_readers", "text")

    def __init__(self, *readers: CallReply) -> None:
        self._readers = list(readers)
        self.text = ""

    @property
    def calls(self) -> int:
        return max((r.calls for r in self._readers if r.complete()), default=0)

    def feed(self, chunk: str) -> Reading:
        self.text += chunk
        self._readers = [r for r in self._readers if r.feed(chunk) == "maybe"]
        return "maybe" if self._readers else "no"

    def complete(self) -> bool:
        return any(r.complete() for r in self._readers)


def reader_for(registry: Registry) -> CallReply | None:
    """The reader for the whole-reply kinds `registry` has (None: it has none)."""
    kinds = {p.kind for p in registry}
    readers: list[CallReply] = []
    if "json_reply" in kinds:
        readers.append(ReplyCalls())
    if "pythonic_reply" in kinds:
        readers.append(PythonicCalls())
    if len(readers) > 1:
        return EitherReply(*readers)
    return readers[0] if readers else None


# ---- guardrail/harmony.py: the whole module after its imports


Route = Literal["answer", "reasoning", "stripped", "closed"]
"""Where a piece of the stream goes; `closed` (with no text) ends one stripped message."""
Routed = list[tuple[Route, str]]
Body = Literal["answer", "reasoning", "call", "preamble"]
"""What a body is: `preamble` until its first non-blank says answer or call."""
BodyJson = Literal["off", "pending", "on"]
"""Whether a call's body is read as JSON: `pending` until its first non-blank says."""

ENDS = ("<|end|>", "<|call|>", "<|return|>")
OPENERS = ("<|start|>", "<|channel|>")
TOKENS = (*OPENERS, "<|message|>", "<|constrain|>", *ENDS)
HEADER_LIMIT = 256
"""The longest header held while its `<|message|>` has not come (real ones are under 80)."""
LEAD = compiled(
    seq(
        Chars(r"[ \t\r\n]", 0, 4),
        Lit("to="),
        Chars(r"[^\s<]", 1, 128),
        Chars(r"[ \t]", 0, 2),
        Lit("<|channel|>"),
    )
)
"""A reply that begins with its recipient, then its channel."""

_TOKEN = re.compile("|".join(re.escape(t) for t in TOKENS))
_IN_JSON = re.compile('"|' + _TOKEN.pattern)
_QUOTE_OR_ESCAPE = re.compile(r'["\\]')
_TOKEN_PREFIXES = frozenset(t[:i] for t in TOKENS for i in range(1, len(t)))
_LONGEST_TOKEN = max(len(t) for t in TOKENS)
_ROLE = re.compile(r"<\|start\|>([^\s<]*)")
_CHANNEL = re.compile(r"<\|channel\|>([^\s<]*)")
_RECIPIENT = re.compile(r"(?:^|[\s>])to=([^\s<]+)")
JSON_ITEM_STARTS = '{["]-0123456789'
"""What follows a JSON array's `[` in a call's arguments: an item (object, array, string,
number) or its end."""
_FIRST_CHAR = re.compile(r"\S")


def route_of(header: str) -> Body:
    """Where a message's body goes, from its whole header (the tokens included)."""
    role = _ROLE.search(header)
    if role is not None and role.group(1) not in ("", "assistant"):
        return "call"
    recipients = _RECIPIENT.findall(header)
    if recipients and recipients[-1] != "assistant":
        return "call"
    channels = _CHANNEL.findall(header)
    channel = channels[-1] if channels else ""
    if channel == "analysis":
        return "reasoning"
    if channel in ("final", ""):
        return "answer"
    return "preamble" if channel == "commentary" else "call"


def _inline_body(header: str) -> str:
    """The body of a header that never got its `<|message|>`: what follows the channel."""
    channels = list(_CHANNEL.finditer(header))
    if not channels:
        return ""
    rest = header[channels[-1].end() :]
    return rest[1:] if rest[:1] in (" ", "\t") else rest


class HarmonyReader:
    """One stream's harmony messages, routed (see the module docstring)."""

    __slots__ = (
        "_body",
        "_escaped",
        "_header",
        "_held",
        "_json",
        "_lead",
        "_string",
        "_unit",
        "idle",
    )

    def __init__(self) -> None:
        self._held = ""
        self._lead = True  # at the reply's start: ` to=x<|channel|>` may open a header
        self._header: str | None = None  # the header read so far, while one is open
        self._body: Body = "answer"
        self._json: BodyJson = "off"  # a call's body is JSON: its strings are data
        self._string = False
        self._escaped = False
        self._unit = False  # a stripped message is open
        self.idle = False  # outside any message with nothing held: no `<`, nothing to do

    @property
    def held(self) -> str:
        return (self._header or "") + self._held

    def feed(self, chunk: str) -> Routed:
        """Where each piece of the stream so far goes (the rest is held)."""
        if self.idle and ("|" not in chunk or "<|" not in chunk) and chunk[-1:] != "<":
            return [("answer", chunk)] if chunk else []
        out: Routed = []
        text, self._held = self._held + chunk, ""
        self._read(text, out, final=False)
        self._set_idle()
        return out

    def _set_idle(self) -> None:
        self.idle = (
            not self._held and self._header is None and not self._lead and self._body == "answer"
        )

    def flush(self) -> Routed:
        """At the end: what was held goes where it stands; an open message ends."""
        out: Routed = []
        text, self._held = self._held, ""
        self._read(text, out, final=True)
        if self._header is not None:
            header, self._header = self._header, None
            self._resolve(header, out)
        self._close(out)
        self._set_idle()
        return out

    # --- reading -------------------------------------------------------------------------

    def _read(self, text: str, out: Routed, final: bool) -> None:
        pos = 0
        while pos < len(text):
            if self._lead:
                pos = self._read_lead(text, pos, final)
                if pos < 0:
                    return
            elif self._header is not None:
                pos = self._read_header(text, pos, out, final)
            elif self._body == "preamble" or self._json == "pending":
                found = _FIRST_CHAR.search(text, pos)
                if found is None and not final:
                    self._held = text[pos:]
                    return
                first = text[found.start()] if found is not None else ""
                after = ""
                if first == "[" and self._body == "preamble" and found is not None:
                    second = _FIRST_CHAR.search(text, found.end())
                    if second is None and not final:
                        self._held = text[pos:]
                        return
                    after = text[second.start()] if second is not None else ""
                self._decide(first, after)
            elif self._string:
                pos = self._read_string(text, pos, out)
            else:
                pos = self._read_body(text, pos, out, final)

    def _read_lead(self, text: str, pos: int, final: bool) -> int:
        """At the reply's start: a header that begins with its recipient, or answer text
        (-1: all of it is held, still undecided)."""
        found = LEAD.full.match(text, pos)
        if found is not None:
            self._lead = False
            self._header = text[pos : found.end()]
            return found.end()
        if not final and LEAD.viable.fullmatch(text, pos) is not None:
            self._held = text[pos:]
            return -1
        self._lead = False
        return pos

    def _read_header(self, text: str, pos: int, out: Routed, final: bool) -> int:
        """More of an open header: up to its `<|message|>` (or an end token, or its limit,
        counted in characters of the stream so that every chunking cuts it alike)."""
        header = self._header
        assert header is not None
        limit = pos + max(HEADER_LIMIT - len(header), 0)
        found = _next_token(text, pos)
        if found is None or found.start() > limit:
            keep = len(text) if final else _held_from(text, pos)
            if found is None and keep <= limit:
                self._header = header + text[pos:keep]
                self._held = text[keep:]
                return len(text)
            self._header = None  # past its limit: what it has so far decides
            self._resolve(header + text[pos:limit], out)
            return limit
        token = found.group()
        header += text[pos : found.start()]
        if token == "<|start|>":  # a header that never got its body: dropped
            self._header = None
            self._strip(header, out)
            self._close(out)
            self._header = token
        elif token == "<|message|>":
            self._header = None
            self._open(header + token, out)
        elif token in ENDS:
            self._header = None
            self._resolve(header, out)
            self._strip(token, out)
            self._end(out)
        else:  # `<|channel|>` or `<|constrain|>`: more of the same header
            self._header = header + token
        return found.end()

    def _read_body(self, text: str, pos: int, out: Routed, final: bool) -> int:
        found = _IN_JSON.search(text, pos) if self._json == "on" else _next_token(text, pos)
        if found is None:
            keep = len(text) if final else _held_from(text, pos)
            self._emit(text[pos:keep], out)
            self._held = text[keep:]
            return len(text)
        token = found.group()
        if token == '"':
            self._emit(text[pos : found.end()], out)
            self._string = True
            return found.end()
        self._emit(text[pos : found.start()], out)
        if token in OPENERS:
            self._close(out)
            self._header = token
        elif token in ENDS:
            self._strip(token, out)
            self._end(out)
        else:  # a stray `<|message|>` or `<|constrain|>`
            self._strip(token, out)
        return found.end()

    def _read_string(self, text: str, pos: int, out: Routed) -> int:
        """Inside a JSON string of a call: to its closing quote, escapes included."""
        if self._escaped:
            self._escaped = False
            self._strip(text[pos], out)
            return pos + 1
        stop = _QUOTE_OR_ESCAPE.search(text, pos)
        if stop is None:
            self._strip(text[pos:], out)
            return len(text)
        if stop.group() == '"':
            self._string = False
            self._strip(text[pos : stop.end()], out)
            return stop.end()
        self._strip(text[pos : stop.end()], out)
        self._escaped = True
        return stop.end()

    # --- routing -------------------------------------------------------------------------

    def _open(self, header: str, out: Routed) -> None:
        """A whole header: stripped, and its body's route set."""
        self._strip(header, out)
        self._body = route_of(header)
        self._string = self._escaped = False
        self._json = "pending" if self._body == "call" else "off"

    def _decide(self, first: str, after: str = "") -> None:
        """A preamble's or a call's first non-blank character ('' at the end) came (and for
        a preamble's `[`, the next one, `after`): a preamble that opens a JSON object or
        array is a call (`[{`, `["`, `[1`, `[]`; `[Update] I am checking` is a preamble), a
        call's body that does is read as JSON."""
        json = first in ("{", "[")
        if self._body == "preamble":
            array = first == "[" and after != "" and after in JSON_ITEM_STARTS
            self._body = "call" if first == "{" or array else "answer"
            json = self._body == "call"
        self._json = "on" if json and self._body == "call" else "off"

    def _resolve(self, header: str, out: Routed) -> None:
        """A header that never got its `<|message|>`: its words after the channel are its
        body (stripped with it when it is a call); the rest of the message follows it."""
        route = route_of(header)
        body = _inline_body(header) if route != "call" else ""
        self._strip(header[: len(header) - len(body)], out)
        self._body, self._json, self._string = route, "off", False
        if route == "preamble":
            self._decide(body.lstrip()[:1])
        self._emit(body, out)

    def _emit(self, text: str, out: Routed) -> None:
        if not text:
            return
        body = self._body
        if body == "call":
            self._strip(text, out)
        else:
            _route_to(out, "reasoning" if body == "reasoning" else "answer", text)

    def _strip(self, text: str, out: Routed) -> None:
        if text:
            self._unit = True
            _route_to(out, "stripped", text)

    def _close(self, out: Routed) -> None:
        if self._unit:
            self._unit = False
            out.append(("closed", ""))

    def _end(self, out: Routed) -> None:
        """A message's end token: what follows is outside any message (answer)."""
        self._close(out)
        self._body, self._json = "answer", "off"
        self._string = self._escaped = False


def _route_to(out: Routed, route: Route, text: str) -> None:
    if out and out[-1][0] == route:
        out[-1] = (route, out[-1][1] + text)
    else:
        out.append((route, text))


def _next_token(text: str, pos: int) -> re.Match[str] | None:
    """The first token at or after `pos`: every token begins `<|`, which str.find finds far
    faster than the token regex can."""
    at = text.find("<|", pos)
    while at >= 0:
        found = _TOKEN.match(text, at)
        if found is not None:
            return found
        at = text.find("<|", at + 1)
    return None


def _held_from(text: str, pos: int) -> int:
    """Where a suffix that may still become a token starts (len(text) when none)."""
    for index in range(max(pos, len(text) - _LONGEST_TOKEN + 1), len(text)):
        if text[index] == "<" and text[index:] in _TOKEN_PREFIXES:
            return index
    return len(text)


# ---- guardrail/scaffolding.py: the whole module after its imports


PREVIEW_CHARS = 200
_NEVER = r"(?!)"  # a regex that matches nothing
_WORD = re.compile(r"\w")
CUT_OFF_AFTER = ("", "\n", ".", "!", "?", ":")
"""What an opener cut off by the answer's end may follow to count as a call: nothing, a line
break, or a sentence's end with no space (prose writes a space before a tag it names)."""
_JSON_CHARS = '{}[]"\\'
"""What JSON tracking reads inside a body: nesting, and where strings start."""
_STRING_STOP = re.compile(r'["\\]')
_NON_BLANK = re.compile(f"[^{re.escape(BLANKS)}]")
Verdict = Literal["open", "text", "undecided"]
JsonState = Literal["off", "pending", "on"]


class _Matcher:
    """What a registry compiles to: one opener regex, the prefix sets for hold-back."""

    def __init__(self, registry: Registry) -> None:
        starts = [p.start for p in registry]
        if len(set(starts)) != len(starts):
            raise ValueError("two patterns share an opener")
        self.by_start = {p.start: p for p in registry}
        for a in starts:
            for b in starts:
                if a != b and a in b and not _walled_off(self.by_start[a], b):
                    how = "a prefix of" if b.startswith(a) else "inside"
                    raise ValueError(f"opener {a!r} is {how} {b!r}: ambiguous")
        self.longest = max(len(s) for s in starts)
        self.opener = re.compile(trie_pattern(starts))
        firsts = sorted({s[0] for s in starts})
        self.first = re.compile("[" + "".join(re.escape(c) for c in firsts) + "]")
        anywhere = [p for p in registry if p.boundary == "any"]
        self.bounded = tuple(p for p in registry if p.boundary != "any")
        """Patterns that may begin only at a word start or at the answer's start."""
        self.first_char = firsts[0] if len(firsts) == 1 and not self.bounded else None
        self.special_prefixes = _proper_prefixes(p.start for p in anywhere if p.special)
        self.plain_prefixes = _proper_prefixes(p.start for p in anywhere if not p.special)
        self.plain = any(not p.special for p in registry)
        """Whether code fences matter: a plain marker (even a 1-char one, with no prefix)."""
        self.tracks = bool(self.bounded) or any(
            p.hint is not None and p.kind != "token" for p in registry
        )
        """Whether a filter keeps the character before its held text: for bounded patterns,
        and for an opener with a hint, which the answer's end may cut off (`_cut_off`)."""


def _walled_off(inner: Pattern, outer: str) -> bool:
    """Whether `inner`'s opener, found inside the opener `outer`, can never open there: it
    begins only at a word or the answer's start, and each place it occurs in `outer` comes
    right after a letter, digit or `_` (gpt-oss's `analysis` inside `assistantanalysis`).
    Anything else (a prefix above all) would be ambiguous: one opener held inside another."""
    places = [i for i in range(len(outer)) if outer.startswith(inner.start, i)]
    return inner.boundary != "any" and all(
        i > 0 and _WORD.match(outer[i - 1]) is not None for i in places
    )


def trie_pattern(markers: Iterable[str]) -> str:
    """A regex that finds any of `markers`, the longest where several start at one place,
    built as a trie of their common prefixes: Python's `re` tries an alternation's branches
    one by one, so at each `<` in a text a flat list of 60 openers costs 60 attempts, the
    trie a few."""
    trie: dict[str, dict[str, Any]] = {}
    for marker in markers:
        node = trie
        for char in marker:
            node = node.setdefault(char, {})
        node[""] = {}  # a marker ends here

    def pattern(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + pattern(node[char]) for char in sorted(node) if char]
        if not branches:
            return ""
        if len(branches) == 1 and "" not in node:
            return branches[0]
        group = "(?:" + "|".join(branches) + ")"
        return group + "?" if "" in node else group  # greedy: the longer marker first

    return pattern(trie) or _NEVER


def _proper_prefixes(markers: Iterable[str]) -> frozenset[str]:
    return frozenset(m[:i] for m in markers for i in range(1, len(m)))


@functools.lru_cache(maxsize=64)
def _matcher(registry: Registry) -> _Matcher:
    return _Matcher(registry)


def _markers(registry: Registry) -> Registry:
    """The patterns found by their markers: all but a whole reply of calls (json_reply,
    pythonic_reply) and harmony's messages (read by their own reader, in front of the rest)."""
    return tuple(p for p in registry if p.kind not in (*WHOLE_REPLY_KINDS, "harmony"))


def _after_start(markers: Registry) -> Registry | None:
    """The markers once the answer has begun: all but those that open only at its start
    (None: there are none to drop, or none would be left)."""
    later = tuple(p for p in markers if p.boundary != "start")
    return later if later and len(later) < len(markers) else None


@dataclass(frozen=True)
class _Plan:
    """What a registry compiles to, once: the matcher, the markers once the answer has
    begun, and whether a whole-reply reader and harmony's reader are needed. A filter is
    made for every stream: it looks its registry up once (patterns hash once, patterns.py)."""

    matcher: _Matcher
    later: Registry | None
    reads_reply: bool
    reads_harmony: bool


@functools.lru_cache(maxsize=64)
def _plan(registry: Registry) -> _Plan:
    markers = _markers(registry)
    if not markers:
        raise ValueError("a registry needs a pattern with a marker")
    kinds = {p.kind for p in registry}
    return _Plan(
        matcher=_matcher(markers),
        later=_after_start(markers),
        reads_reply=bool(kinds & set(WHOLE_REPLY_KINDS)),
        reads_harmony="harmony" in kinds,
    )


@dataclass(frozen=True)
class _Inside:
    """How a span is read from the inside: `search` finds what may end it (its end markers;
    a braced body's braces and quotes; a JSON body's nesting and string quotes, and its
    skips), `prefixes` of those are held back (the longest is `longest` - 1 long), and a
    chunk without any of `firsts` cannot end it or change its state. `plain` finds the end
    markers alone (a `leading` body that is not JSON), `ends` are they."""

    search: re.Pattern[str]
    longest: int
    prefixes: frozenset[str]
    firsts: re.Pattern[str]
    plain: re.Pattern[str] = re.compile(_NEVER)
    ends: frozenset[str] = frozenset()


def _chars(markers: Iterable[str]) -> re.Pattern[str]:
    firsts = "".join(re.escape(c) for c in sorted({m[0] for m in markers}))
    return re.compile(f"[{firsts}]" if firsts else _NEVER)


def _reading(
    words: Iterable[str], extra: Iterable[str] = (), extra_firsts: Iterable[str] = ()
) -> tuple[re.Pattern[str], int, frozenset[str], re.Pattern[str]]:
    """What reads `words` inside a span: a search for them (longest first) and the `extra`
    regex alternatives, the longest word's length, the words' proper prefixes (held back),
    and the first characters of the words and of `extra_firsts`."""
    words = sorted(words, key=len, reverse=True)
    search = re.compile("|".join([*(re.escape(w) for w in words), *extra]) or _NEVER)
    longest = max((len(w) for w in words), default=0)
    return search, longest, _proper_prefixes(words), _chars([*words, *extra_firsts])


@functools.lru_cache(maxsize=256)
def _inside(pattern: Pattern) -> _Inside:
    if pattern.kind == "braced":
        return _Inside(*_reading(pattern.quotes, (r"\{", r"\}"), "{}"))
    ends = frozenset(pattern.ends)
    plain = _reading(ends)[0]
    if pattern.quotes:  # a span whose quotes make what they hold data
        return _Inside(*_reading((*ends, *pattern.quotes)), plain, ends)
    if pattern.kind != "json_value" and pattern.json_strings == "never":
        return _Inside(*_reading(ends), plain, ends)
    json_chars = f"[{re.escape(_JSON_CHARS)}]"
    return _Inside(*_reading((*ends, *pattern.skips), (json_chars,), _JSON_CHARS), plain, ends)


_NOTHING_INSIDE = _Inside(re.compile(_NEVER), 0, frozenset(), re.compile(_NEVER))


@functools.lru_cache(maxsize=64)
def _trailer(pattern: Pattern) -> Compiled:
    """Blanks, then one of the pattern's trailers."""
    options = alt(*(Lit(t) for t in pattern.trailers))
    return compiled(seq(Chars(r"[ \t\r\n]", 0, TRAILER_SPACE), options))


class ScaffoldingFilter:
    """Incremental scaffolding stripper for one stream. Not reusable after flush()."""

    __slots__ = (
        "_at_start",
        "_braces",
        "_escaped",
        "_fast",
        "_fences",
        "_flushed",
        "_harmony",
        "_held",
        "_inside",
        "_json",
        "_last",
        "_later",
        "_matcher",
        "_preview",
        "_quote",
        "_reasoning",
        "_reply",
        "_span",
        "_track",
        "_trailing",
        "_trailing_first",
        "first_span",
        "stripped_chars",
        "stripped_spans",
    )

    def __init__(self, registry: Registry = DEFAULT_REGISTRY) -> None:
        plan = _plan(registry)
        self._matcher = plan.matcher
        self._later = plan.later  # the markers once the answer has begun
        # a whole reply of JSON calls (Llama's): read from its start until it is decided
        self._reply = reader_for(registry) if plan.reads_reply else None
        # gpt-oss's messages: routed to the answer (read on below), the reasoning, or away
        self._harmony = HarmonyReader() if plan.reads_harmony else None
        self._reasoning: list[str] = []
        self._held = ""
        self._span: Pattern | None = None
        self._inside = _NOTHING_INSIDE
        self._braces = 0  # a braced or JSON body's open braces (and a JSON body's brackets)
        self._quote = ""  # the quote a braced or JSON body is inside, if any
        self._escaped = False  # a JSON string's backslash ended the last chunk
        self._json: JsonState = "off"  # whether the open span's body is read as JSON
        self._trailing: Pattern | None = None  # a span just ended; its trailer may follow
        self._trailing_first = False  # ... and that span was the first one stripped
        self._preview = ""
        self._fences = CodeContext() if self._matcher.plain else None
        self._track = self._matcher.tracks  # keep _last and _at_start up to date
        self._last = ""  # the last character of the stream before the held text
        self._at_start = True  # nothing of the stream came before the held text
        # The one character every opener starts with, while nothing is held, open or being
        # read: a chunk without it is shown as it came. `""` when there is no such fast
        # path (`""` is in every chunk, so the test costs no None check).
        self._fast = ""
        self._set_clean()
        self._flushed = False
        self.stripped_chars = 0  # characters taken out so far
        self.stripped_spans = 0  # spans and tokens taken out so far
        self.first_span = ""  # the first of them, cut to PREVIEW_CHARS characters

    @property
    def held(self) -> str:
        """The text held back right now (what could still become markup)."""
        held = self._reply.text if self._reply is not None else self._held
        return held + self._harmony.held if self._harmony is not None else held

    @property
    def quiet_char(self) -> str | None:
        """The one character whose absence from a chunk makes feed() return the chunk as it
        is, with nothing read or changed (nothing held, open or being read, one opener's
        first character); None when no such character says it now. What lets a caller
        pass text on without feeding it, as the guard proxy passes a clean read's bytes."""
        return self._fast or None

    @property
    def may_turn_quiet(self) -> bool:
        """Whether quiet_char can name a character once nothing is held or open: the
        openers read now share one first character, and no code fence is read."""
        single = self._matcher.first_char if self._fences is None and not self._track else None
        return single is not None and (self._harmony is None or single == "<")

    def take_reasoning(self) -> str:
        """The reasoning routed out of the answer text since the last call (harmony's
        `analysis` channel), never filtered (G9); '' when there is none."""
        if not self._reasoning:
            return ""
        text = "".join(self._reasoning)
        self._reasoning.clear()
        return text

    def feed(self, chunk: str) -> str:
        """The part of the stream that is safe to show now, `chunk` included."""
        if self._fast not in chunk:  # `""` (no fast path) is in every chunk
            return chunk  # nothing held, open or being read, and no opener can start here
        harmony = self._harmony
        if harmony is not None and (
            not harmony.idle
            or ("<" in chunk and (chunk[-1] == "<" or ("|" in chunk and "<|" in chunk)))
        ):  # every harmony token starts `<|`: one-character tests first, they cost far less
            return self._routed(harmony.feed(chunk))
        return self._feed_answer(chunk)

    def _routed(self, pieces: Routed) -> str:
        """Harmony's pieces: answer text read on, reasoning kept for take_reasoning(),
        markup counted as stripped."""
        out: list[str] = []
        for route, text in pieces:
            if route == "answer":
                out.append(self._feed_answer(text))
            elif route == "reasoning":
                self._reasoning.append(text)
            elif route == "stripped":
                self._strip(text)
            else:
                self._count_span()
        self._set_clean()
        return "".join(out)

    def _feed_answer(self, chunk: str) -> str:
        if self._reply is not None:
            return self._feed_reply(chunk)
        if self._fast not in chunk:
            return chunk
        return self._feed(chunk)

    def _feed_reply(self, chunk: str) -> str:
        """While the reply may still be nothing but JSON calls, all of it is held; once it
        cannot be, it is read as any text from its start."""
        reply = self._reply
        assert reply is not None
        if reply.feed(chunk) == "maybe":
            return ""
        self._reply = None
        return self._feed(reply.text)

    def _end_reply(self) -> str:
        """At the end: a reply of nothing but calls is stripped whole; any other held reply
        is read as text."""
        reply, self._reply = self._reply, None
        if reply is None or not reply.text:
            return ""
        if not reply.complete():
            return self._feed(reply.text)
        self._strip(reply.text)
        self._close_span()
        self.stripped_spans += reply.calls - 1
        return ""

    def _feed(self, chunk: str) -> str:
        """Cheaper paths first, then a full scan of the held text and the chunk."""
        if self._flushed:  # flush() turned the fast path off, so every feed gets here
            raise RuntimeError("ScaffoldingFilter.feed() after flush(): use a fresh filter")
        held = self._held
        if self._span is not None:
            if self._escaped:  # the chunk's first character is a JSON string's escaped one
                pass
            elif not held and self._json != "pending":
                if self._inside.firsts.search(chunk) is None:
                    self._span_text(chunk)  # nothing could end the span: all of it is span
                    self._passed(chunk)
                    return ""
            elif held + chunk in self._inside.prefixes:
                self._held = held + chunk  # still an end marker's prefix: hold it all
                return ""
        elif self._trailing is None:
            if not held:
                if self._matcher.first.search(chunk) is None:
                    self._feed_fences(chunk)
                    self._passed(chunk)
                    return chunk
            elif held + chunk in self._matcher.special_prefixes:
                self._held = held + chunk  # still a special opener's prefix: hold it all
                return ""
        return self._scan(held + chunk)

    def _passed(self, text: str) -> None:
        """`text` went by without a scan: what boundaries need to know of it."""
        if self._track and text:
            self._moved_past(text[-1])

    def _moved_past(self, last: str) -> None:
        """Stream text ending with `last` went by: the answer has begun."""
        self._last, self._at_start = last, False
        if self._later is not None:
            self._begun()

    def _begun(self) -> None:
        """The answer has begun: patterns that open only at its start (gpt-oss's residue
        `analysis`) can no longer match, so the matcher drops them, and prose with their
        first letters costs no scan."""
        assert self._later is not None
        self._matcher, self._later = _matcher(self._later), None
        if not self._matcher.plain:
            self._fences = None
        self._track = self._matcher.tracks
        self._set_clean()

    def _set_clean(self) -> None:
        """Outside any span with nothing held (and no reply or harmony message being read),
        a chunk with no opener's first character is returned as it is; with one first
        character and no fences, by a bare `in` test in feed(). Harmony's tokens all start
        with `<`, so with harmony read that test holds only when that character is `<`."""
        harmony = self._harmony
        clean = (
            self._span is None
            and not self._held
            and self._trailing is None
            and self._reply is None
            and (harmony is None or harmony.idle)
        )
        single = self._matcher.first_char if self._fences is None and not self._track else None
        if harmony is not None and single != "<":
            single = None
        self._fast = single if clean and single is not None else ""

    def flush(self) -> str:
        """At stream end: held text is read as final (a partial opener, an undecided hint or
        a partial trailer is text); an open span is stripped to the end.

        A second flush returns ''; a feed after flush is an error.
        """
        if self._flushed:
            return ""
        routed = self._routed(self._harmony.flush()) if self._harmony is not None else ""
        replied = self._end_reply()
        self._flushed = True
        held, self._held = self._held, ""
        out = self._scan(held, final=True)
        if self._span is not None:
            self._close_span()
        self._trailing = None
        self._fast = ""
        return routed + replied + out

    # --- scanning ------------------------------------------------------------------------

    def _scan(self, text: str, final: bool = False) -> str:
        """Read `text` (the held text and a new chunk): what may be shown, and what to hold.
        `final`: no more text will come, so nothing is held."""
        out: list[str] = []
        pos = 0
        while True:
            if self._span is not None:
                end, read = self._span_end(text, pos, final)
                if end is None:
                    keep = len(text) if final else self._hold_inside(text, read)
                    self._span_text(text[pos:keep])
                    break
                self._span_text(text[pos:end], ended=True)
                pos = end
                self._close_span()
                continue
            if self._trailing is not None:
                after = self._after_trailer(text, pos, final)
                if after is None:
                    keep = pos  # blanks and a partial trailer: hold them
                    break
                pos = after
                continue
            match = self._matcher.opener.search(text, pos)
            if match is None:
                keep = len(text) if final else self._hold_outside(text, pos)
                self._emit(out, text[pos:keep])
                break
            start = match.start()
            if not final and start > len(text) - self._matcher.longest:
                # An opener found in the tail may sit inside the prefix of a longer one that
                # began before it (an inner opener walled off there): hold from that prefix.
                held_from = self._hold_outside(text, pos)
                if held_from < start:
                    self._emit(out, text[pos:held_from])
                    keep = held_from
                    break
            pattern = self._matcher.by_start[match.group()]
            self._emit(out, text[pos:start])
            verdict = self._verdict(pattern, text, start, match.end(), final)
            if verdict == "undecided":
                keep = start
                break
            if verdict == "text":  # scanned on from its second character, so an opener
                self._emit(out, text[start])  # overlapping its tail is still found
                pos = start + 1
                continue
            pos = match.end()
            self._open(pattern, match.group())
        self._held = text[keep:]
        if self._track and keep:
            self._moved_past(text[keep - 1])
        self._set_clean()
        return "".join(out)

    def _emit(self, out: list[str], text: str) -> None:
        out.append(text)
        self._feed_fences(text)

    def _feed_fences(self, text: str) -> None:
        if self._fences is not None:
            self._fences.feed(text)

    def _verdict(self, pattern: Pattern, text: str, start: int, after: int, final: bool) -> Verdict:
        """Whether the opener at `start` (its marker ends at `after`) opens its pattern."""
        if pattern.boundary == "word":
            before = text[start - 1] if start else self._last
            if before and _WORD.match(before):
                return "text"
        elif pattern.boundary == "start" and (start or not self._at_start):
            return "text"
        if not pattern.special and self._fences is not None and self._fences.open:
            return "text"  # a plain marker in a code block is an example
        if pattern.hint is not None:
            hint = compiled(pattern.hint)
            if hint.full.match(text, after) is None:
                if not final and hint.viable.fullmatch(text, after) is not None:
                    return "undecided"
                if (
                    final
                    and hint.viable.fullmatch(text, after)
                    and self._cut_off(pattern, text, start, after)
                ):
                    return "open"
                return "text"
        return "open"

    def _cut_off(self, pattern: Pattern, text: str, start: int, after: int) -> bool:
        """Whether the opener at `start`, whose hint the answer's end cut short, is a call
        the end cut off: at a line's start or glued to a sentence's end, not after a space
        (`I will check.\n<tool_call>`, `Let me look.<tool_call>`, `\n<tool_call>gr`). G8: a
        complete start marker with no end is stripped through the end; `the tag is
        <tool_call>` is prose."""
        if pattern.kind == "token" or pattern.boundary != "any":
            return False  # a residue word (`analysis`) alone is prose
        before = text[start - 1] if start else ("" if self._at_start else self._last)
        return before in CUT_OFF_AFTER

    def _hold_outside(self, text: str, pos: int) -> int:
        """Where the held-back suffix starts: the longest one that is an opener's prefix."""
        matcher = self._matcher
        window = max(pos, len(text) - matcher.longest + 1)
        for candidate in matcher.first.finditer(text, window):
            index = candidate.start()
            suffix = text[index:]
            if suffix in matcher.special_prefixes:
                return index
            if suffix in matcher.plain_prefixes and not self._fenced_at(text, pos, index):
                return index
            if any(self._may_begin(p, suffix, text, pos, index) for p in matcher.bounded):
                return index
        return len(text)

    def _may_begin(self, pattern: Pattern, suffix: str, text: str, pos: int, index: int) -> bool:
        """Whether `suffix`, at `index`, could still become `pattern`'s opener."""
        if len(suffix) >= len(pattern.start) or not pattern.start.startswith(suffix):
            return False
        if pattern.boundary == "word":
            before = text[index - 1] if index else self._last
            if before and _WORD.match(before):
                return False
        elif index or not self._at_start:
            return False
        return pattern.special or not self._fenced_at(text, pos, index)

    def _fenced_at(self, text: str, pos: int, index: int) -> bool:
        if self._fences is None:
            return False
        probe = self._fences.copy()
        probe.feed(text[pos:index])
        return probe.open

    def _hold_inside(self, text: str, pos: int) -> int:
        """Where the held-back suffix starts inside a span: a prefix of one of its ends (or of
        a braced body's quotes)."""
        inside = self._inside
        for candidate in inside.firsts.finditer(text, max(pos, len(text) - inside.longest + 1)):
            if text[candidate.start() :] in inside.prefixes:
                return candidate.start()
        return len(text)

    def _span_end(self, text: str, pos: int, final: bool) -> tuple[int | None, int]:
        """Where the open span ends in `text` (after its end marker or closing brace), or
        None; and where reading stopped (a braced body's tokens are not read twice)."""
        assert self._span is not None
        if self._json == "pending":  # a `leading` body: JSON when it begins with { or [
            found = _NON_BLANK.search(text, pos)
            if found is None:
                return None, len(text)
            self._json = "on" if text[found.start()] in "{[" else "off"
        if self._json == "on":
            return self._json_end(text, pos, final)
        braced = self._span.kind == "braced"
        if not braced and not self._span.quotes:
            match = self._inside.plain.search(text, pos)
            return (None, pos) if match is None else (match.end(), match.end())
        while True:
            if self._quote:  # inside a quote only the same quote ends it
                found = text.find(self._quote, pos)
                if found < 0:
                    return None, pos
                pos, self._quote = found + len(self._quote), ""
                continue
            match = self._inside.search.search(text, pos)
            if match is None:
                return None, pos
            token, pos = match.group(), match.end()
            if not braced:  # a span with quotes: its end, or a quote opening
                if token in self._inside.ends:
                    return pos, pos
                self._quote = token
            elif token == "{":
                self._braces += 1
            elif token != "}":
                self._quote = token
            elif self._braces:  # a `}` before any `{` is body text
                self._braces -= 1
                if not self._braces:
                    return pos, pos

    def _json_end(self, text: str, pos: int, final: bool) -> tuple[int | None, int]:
        """`_span_end` for a body read as JSON: an end marker ends it outside a string (a
        `json_value` body ends where its first object or array closes); a string is read to
        its closing quote, backslash escapes included, across chunks. Outside a string,
        nothing from `held` on is read: it may begin an end marker or a skip (DeepSeek's
        escaped closer cut after its backslash, a JSON character), so it is read once,
        whole, with the next chunk."""
        inside, value = self._inside, self._span is not None and self._span.kind == "json_value"

        def hold_from(at: int) -> int:
            return len(text) if final else self._hold_inside(text, at)

        held = hold_from(pos)
        if self._escaped:  # the character a backslash escaped opens this chunk
            if pos >= len(text):
                return None, pos
            pos, self._escaped = pos + 1, False
        while True:
            if self._quote:  # no marker ends a string: it is read to its end
                stop = _STRING_STOP.search(text, pos)
                if stop is None:
                    return None, len(text)
                if stop.group() == '"':
                    pos, self._quote = stop.end(), ""
                    if pos > held:  # the string ran past what looked like a marker's start
                        held = hold_from(pos)
                elif stop.end() == len(text):
                    self._escaped = True
                    return None, len(text)
                else:
                    pos = stop.end() + 1
                continue
            match = inside.search.search(text, pos)
            if match is None or match.start() >= held:
                return None, held
            token, pos = match.group(), match.end()
            if token in inside.ends:
                return pos, pos
            if len(token) > 1:  # a skip, read whole
                continue
            if token in "{[":
                self._braces += 1
            elif token in "}]" and self._braces:
                self._braces -= 1
                if value and not self._braces:
                    return pos, pos
            elif token == '"' and self._braces:
                self._quote = '"'

    def _after_trailer(self, text: str, pos: int, final: bool) -> int | None:
        """After a span with trailers: where scanning goes on (past the trailer, stripped,
        when it came), or None while blanks and a partial trailer may still become one."""
        assert self._trailing is not None
        trailer = _trailer(self._trailing)
        match = trailer.full.match(text, pos)
        if match is not None:
            self._strip_trailer(text[pos : match.end()])
        elif not final and trailer.viable.fullmatch(text, pos) is not None:
            return None
        self._trailing = None
        return pos if match is None else match.end()

    # --- bookkeeping ---------------------------------------------------------------------

    def _open(self, pattern: Pattern, marker: str) -> None:
        self._strip(marker)
        if pattern.kind == "token":
            self._span = pattern  # closed at once: only its trailers may follow
            self._close_span()
        else:
            self._span = pattern
            self._inside = _inside(pattern)
            self._braces, self._quote, self._escaped = 0, "", False
            if pattern.kind == "json_value" or pattern.json_strings == "always":
                self._json = "on"
            else:
                self._json = "pending" if pattern.json_strings == "leading" else "off"

    def _span_text(self, text: str, *, ended: bool = False) -> None:
        """Text inside the open span (`ended`: its end marker last): stripped, or, for a
        span whose body is reasoning, that body kept for take_reasoning() and only the end
        marker stripped."""
        span = self._span
        if span is None or not span.reasoning:
            self._strip(text)
            return
        marker = next((e for e in span.ends if text.endswith(e)), "") if ended else ""
        body = text[: len(text) - len(marker)]
        if body:
            self._reasoning.append(body)
        self._strip(marker)

    def _strip(self, text: str) -> None:
        self.stripped_chars += len(text)
        if self.stripped_spans == 0:  # only the first span's preview is ever kept
            room = PREVIEW_CHARS - len(self._preview)
            if room > 0:
                self._preview += text[:room]

    def _count_span(self) -> None:
        """One more span (or token) stripped; the first one's preview is kept."""
        if self.stripped_spans == 0:
            self.first_span = self._preview
            self._preview = ""
        self.stripped_spans += 1

    def _strip_trailer(self, text: str) -> None:
        """A trailer belongs to the span before it, in the count and in the preview."""
        self.stripped_chars += len(text)
        if self._trailing_first:
            self.first_span = (self.first_span + text)[:PREVIEW_CHARS]

    def _close_span(self) -> None:
        self._count_span()
        span, self._span = self._span, None
        self._json = "off"
        if span is not None and span.trailers:
            self._trailing, self._trailing_first = span, self.stripped_spans == 1


# ---- guardrail/policy.py: MALFORMED_REPLY, RoundFilter, needs_recovery and what they use


MALFORMED_REPLY = "The model returned a malformed reply — please try again."
"""What the user is told when the recovery was empty too (contract G3, verbatim)."""


class RoundFilter:
    """The answer text of one model request, through a fresh scaffolding filter."""

    __slots__ = ("_filter", "visible")

    def __init__(self, registry: Registry) -> None:
        self._filter = ScaffoldingFilter(registry)
        self.visible = False  # has any non-whitespace text been shown?

    def feed(self, text: str) -> str:
        return self._seen(self._filter.feed(text))

    def flush(self) -> str:
        return self._seen(self._filter.flush())

    def _seen(self, shown: str) -> str:
        if not self.visible and shown and not shown.isspace():
            self.visible = True
        return shown

    @property
    def quiet_char(self) -> str | None:
        """ScaffoldingFilter.quiet_char: text without it goes through unchanged."""
        return self._filter.quiet_char

    @property
    def may_turn_quiet(self) -> bool:
        """ScaffoldingFilter.may_turn_quiet."""
        return self._filter.may_turn_quiet

    def take_reasoning(self) -> str:
        """Reasoning the filter routed out of the answer text since the last call (gpt-oss's
        `analysis` channel written into content); '' when there is none."""
        return self._filter.take_reasoning()

    @property
    def stripped_chars(self) -> int:
        return self._filter.stripped_chars

    @property
    def first_span(self) -> str:
        """The first stripped span, cut to its first PREVIEW_CHARS characters ('' if none)."""
        return self._filter.first_span


def needs_recovery(*, stripped_chars: int, visible: bool, tool_calls: int) -> bool:
    """Whether a finished round gets the one recovery request (G2; never with tool calls, G12)."""
    return stripped_chars > 0 and not visible and tool_calls == 0


# ---- scaffold_guard/integrations/openwebui/filter_template.py: the whole module after its imports


MAX_OPEN_REPLIES = 1024
"""How many replies may stream through the filter at once before the oldest is forgotten."""

ReplyKey = tuple[str, str, int]
"""(what names the reply: "message" or "completion", that name, the choice index)."""

TextPart = dict[str, Any]
"""An output item's text part, its `text` found to be a string (and kept one)."""


SETTINGS = ("auto", "none", "all")
"""The valve's words besides profile names (guardrail.model_profiles.parse_profiles)."""


def valve_words(text: str) -> str:
    """A valve's text as parse_profiles reads it: comma- or space-separated, any case (a
    valve saved before `auto` existed may hold `hermes mistral`)."""
    return ",".join(text.replace(",", " ").lower().split())


def profile_choice(text: str) -> ProfileChoice:
    """The valve's setting; an unknown word is skipped, not raised (the valve refuses it
    when saved, so only a hand-edited database could hold one)."""
    words = valve_words(text).split(",")
    try:
        return parse_profiles(",".join(w for w in words if w in PROFILES or w in SETTINGS))
    except ValueError:  # a setting mixed with names, `auto,hermes`: the names alone
        return parse_profiles(",".join(w for w in words if w in PROFILES))


def model_names(named: object, model: object) -> tuple[object, ...]:
    """The names an answer goes by: the chunk's or body's `model` (`named`: what the server
    or Open WebUI calls it) and Open WebUI's model (`__model__`): its id, often an alias a
    person chose, and the base model id of a workspace model built on another."""
    info = _get(model, "info")
    return (_get(named, "model"), _get(model, "id"), _get(info, "base_model_id"))


class _Reply:
    """One streamed choice of one reply: its filter, and whether it carried tool calls."""

    __slots__ = ("filter", "tool_calls")

    def __init__(self, registry: Registry) -> None:
        self.filter = RoundFilter(registry)
        self.tool_calls = 0

    def end(self, *, tool_call_finish: bool) -> tuple[str, bool]:
        """The held tail, and whether the whole reply was markup with no tool call (so its
        user must read the malformed-reply copy)."""
        tail = self.filter.flush()
        tool_calls = self.tool_calls + int(tool_call_finish)
        stripped, visible = self.filter.stripped_chars, self.filter.visible
        return tail, needs_recovery(stripped_chars=stripped, visible=visible, tool_calls=tool_calls)


class _OpenReplies:
    """The replies streaming now, least recently fed first, at most `bound` of them."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._replies: OrderedDict[ReplyKey, _Reply] = OrderedDict()

    def __len__(self) -> int:
        return len(self._replies)

    def get(self, key: ReplyKey) -> _Reply | None:
        reply = self._replies.get(key)
        if reply is not None:
            self._replies.move_to_end(key)
        return reply

    def start(self, key: ReplyKey, registry: Registry) -> _Reply:
        reply = self._replies[key] = _Reply(registry)
        while len(self._replies) > self._bound:
            self._replies.popitem(last=False)
        return reply

    def pop(self, key: ReplyKey) -> None:
        self._replies.pop(key, None)

    def pop_message(self, message_id: str) -> list[_Reply]:
        """The open replies of an Open WebUI message, lowest choice first, now closed."""
        keys = sorted(k for k in self._replies if k[:2] == ("message", message_id))
        return [self._replies.pop(k) for k in keys]


class Filter:
    """Keeps raw tool-call markup out of what Open WebUI shows and saves (module docstring)."""

    class Valves(BaseModel):
        enabled: bool = Field(
            default=True, description="Strip raw tool-call markup from answers (off: pass all)."
        )
        profiles: str = Field(
            default="auto",
            description=(
                "Markup stripped besides LFM2's: auto (by the model's name), none, all, or "
                "profiles, comma-separated: " + ", ".join(PROFILES)
            ),
        )
        priority: int = Field(
            default=0, description="Filter order: Open WebUI runs lower priorities first."
        )

        @field_validator("profiles")
        @classmethod
        def known_profiles(cls, value: str) -> str:
            parse_profiles(valve_words(value))  # raises ValueError naming the known ones
            return value

    def __init__(self) -> None:
        self.valves = self.Valves()
        self._open = _OpenReplies(MAX_OPEN_REPLIES)

    def stream(
        self, event: object, __metadata__: object = None, __model__: object = None
    ) -> object:
        """One event of a streamed reply, its choices' content filtered in place."""
        if not self.valves.enabled or not is_object(event):
            return event
        choices = event.get("choices")
        if is_array(choices):
            name = _reply_name(event, __metadata__)
            models = model_names(event, __model__)
            for position, choice in enumerate(choices):
                if is_object(choice):
                    self._filter_choice(name, position, choice, models)
        return event

    def outlet(self, body: object, __metadata__: object = None, __model__: object = None) -> object:
        """The finished chat: every assistant message's content and output text repaired."""
        if not self.valves.enabled or not is_object(body):
            return body
        messages = body.get("messages")
        if not is_array(messages):
            return body
        message_id = _string(_get(__metadata__, "message_id")) or _string(body.get("id"))
        unfinished = self._open.pop_message(message_id) if message_id else []
        registry = profile_choice(self.valves.profiles).registry(*model_names(body, __model__))
        for message in objects(messages):
            if message.get("role") != "assistant":
                continue
            tail = ""
            if unfinished and message.get("id") == message_id:
                tail, malformed = unfinished[0].end(tool_call_finish=False)
                tail = MALFORMED_REPLY if malformed else tail  # as its finish chunk would
            _repair_message(message, registry, tail)
        return body

    def _filter_choice(
        self, name: tuple[str, str], position: int, choice: JSONObject, models: tuple[object, ...]
    ) -> None:
        index = choice.get("index")
        index = index if type(index) is int else position
        key: ReplyKey = (*name, index)
        delta = as_object(choice.get("delta"))
        text = _text(delta.get("content")) if delta is not None else None
        calls = delta is not None and bool(delta.get("tool_calls"))
        finish = choice.get("finish_reason")
        reply = self._open.get(key)
        if reply is None:
            if text is None and not calls:
                return  # nothing of this reply has been text: nothing held, nothing to say
            registry = profile_choice(self.valves.profiles).registry(*models)
            reply = self._open.start(key, registry)  # the reply keeps it to its end
        reply.tool_calls += calls
        shown = reply.filter.feed(text) if text else ""
        if finish is not None:
            self._open.pop(key)
            tail, malformed = reply.end(tool_call_finish=finish == "tool_calls")
            shown = MALFORMED_REPLY if malformed else shown + tail
        thought = reply.filter.take_reasoning()
        if text is None and not shown and not thought:
            return
        if delta is None:
            delta = choice["delta"] = {}
        delta["content"] = shown
        if thought:  # gpt-oss's analysis channel: Open WebUI shows it as reasoning
            before = delta.get("reasoning_content")
            delta["reasoning_content"] = (before if isinstance(before, str) else "") + thought


def _reply_name(chunk: JSONObject, metadata: object) -> tuple[str, str]:
    message_id = _string(_get(metadata, "message_id"))
    if message_id:
        return ("message", message_id)
    return ("completion", _string(chunk.get("id")))


def _get(mapping: object, key: str) -> object:
    return (as_object(mapping) or {}).get(key)


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _text(content: object) -> str | None:
    """A delta's content as the text Open WebUI shows (None: no text in this delta)."""
    if isinstance(content, str):
        return content
    return f"{content}" if content else None


class _Texts:
    """Some whole texts of one message, each through a fresh filter, and what that took."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.stripped = 0
        self.visible = False

    def repair(self, text: str) -> str:
        whole = RoundFilter(self.registry)
        shown = whole.feed(text) + whole.flush()
        self.stripped += whole.stripped_chars
        self.visible = self.visible or whole.visible
        return shown

    def all_markup(self, tool_calls: int) -> bool:
        return needs_recovery(
            stripped_chars=self.stripped, visible=self.visible, tool_calls=tool_calls
        )


def _repair_message(message: JSONObject, registry: Registry, tail: str) -> None:
    """Repair one assistant message in place, after appending `tail` (what its unfinished
    stream still had to show) to its content and its output."""
    parts = _text_parts(message.get("output"))
    if tail:
        _append(message, parts, tail)
    text = _Texts(registry)
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = text.repair(content)
    output = _Texts(registry)
    for part in parts:
        part["text"] = output.repair(part["text"])
    tool_calls = _tool_calls(message)
    if text.all_markup(tool_calls) or output.all_markup(tool_calls):
        _show_malformed(message, parts)


def _append(message: JSONObject, parts: list[TextPart], tail: str) -> None:
    content = message.get("content")
    if isinstance(content, str) or content is None:
        message["content"] = (content or "") + tail
    output = message.get("output")
    if parts:
        parts[-1]["text"] += tail
    elif is_array(output):
        parts.append(_new_text_item(output, tail))


def _text_parts(output: object) -> list[TextPart]:
    """The text parts of a message's `message` output items, in order (reasoning, tool
    calls and their results are other item types, left alone)."""
    parts: list[TextPart] = []
    for item in objects(output):
        if item.get("type") != "message":
            continue
        parts += [
            part for part in objects(item.get("content")) if isinstance(part.get("text"), str)
        ]
    return parts


def _tool_calls(message: JSONObject) -> int:
    count = len(as_array(message.get("tool_calls")))
    items = as_array(message.get("output"))
    return count + sum(_get(item, "type") == "function_call" for item in items)


def _show_malformed(message: JSONObject, parts: list[TextPart]) -> None:
    """The message reads the malformed-reply copy, in its content and its output."""
    message["content"] = MALFORMED_REPLY
    for number, part in enumerate(parts):
        part["text"] = MALFORMED_REPLY if number == 0 else ""
    output = message.get("output")
    if not parts and is_array(output):
        _new_text_item(output, MALFORMED_REPLY)


def _new_text_item(output: list[object], text: str) -> TextPart:
    """A `message` output item holding `text` appended to `output`; its text part."""
    part: TextPart = {"type": "output_text", "text": text}
    item = {"type": "message", "id": f"msg_{uuid.uuid4().hex}", "status": "completed"}
    output.append({**item, "role": "assistant", "content": [part]})
    return part
