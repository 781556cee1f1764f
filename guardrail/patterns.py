"""What one kind of scaffolding is: a `Pattern`, and a `Registry` of them.

The registries themselves (LFM2's default and the other families' profiles) are data in
guardrail/registries.py; the filter that applies them is guardrail/scaffolding.py. A
pattern is checked when it is made, so a registry nobody could apply never exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from guardrail.shapes import Shape

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
