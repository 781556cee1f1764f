"""Shapes: the short, bounded text a weak marker must be followed by to count as markup.

Some markers read like prose (`<tool_call>` named in a sentence). A pattern's *hint* is a
shape its marker must be followed by, so it opens a span only where a call really began.
`full` says whether the text starts with the shape; `viable` whether all of it could still
be the start of one, so the filter holds it until the next piece decides.

Deliberate choices:
- A shape is a tiny grammar (`Lit`, `Chars`, `Seq`, `Alt`), never a free regex: Python's
  `re` has no partial matching, so `viable` is derived from the grammar.
- Every shape is bounded (`max_len`), so what the filter holds back is too.
- A shape is a lookahead: its text stays in the stream, so an end marker may begin inside
  it (GLM's `<tool_call>f</tool_call>`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass


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
