"""What a grep pattern from the model would cost to compile, judged before it is compiled.

The `regex` module's search time is bounded by grep's time budget, but compiling is not:
a counted repeat is expanded when the pattern is compiled, so `a{10000003}` took 18.8 s and
2.6 GB, with the GIL held, and `a{1000000000}` got the process killed for memory. A time
budget cannot stop that (compile takes no timeout), so `pattern_problem` reads the pattern
first, in one linear pass with no recursion, and refuses it when:

- a counted repeat (`{n}`, `{n,}`, `{n,m}`, `{,m}`) has a bound over MAX_REPEAT, or
- its expanded size (each atom counts 1, a group the size of its content, a counted repeat
  multiplies what it repeats by its largest bound, nested repeats multiply, alternatives
  add up) is over MAX_EXPANDED_SIZE. Measured: a{100000} compiles in 58 ms and
  `(a{1000}){100}` in 68 ms; 10,000 units compile in a few milliseconds.

`*`, `+` and `?` cost nothing to compile (the engine loops rather than expands); what they
cost at search time is the time budget's business. Deliberate choices: the reading is
conservative (alternatives add rather than take the larger, group prefixes such as `?:` or
`?P<name>` count as atoms), since a real search pattern is far below the limits; and it
does not validate the pattern (an unbalanced `)` or a bad escape is the compiler's to
report, and grep then searches the text literally).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_EXPANDED_SIZE", "MAX_REPEAT", "pattern_problem"]

MAX_REPEAT = 1000
MAX_EXPANDED_SIZE = 10_000

_COUNTED = re.compile(r"\{(\d*)(,?)(\d*)\}")
_BRACED_ESCAPE = re.compile(r"\\[pPNx]\{[^}]*\}|\\g<[^>]*>")


@dataclass
class _Group:
    size: int = 0  # what the group's content expands to so far
    last: int = 0  # the size of the last atom, which a quantifier would repeat


def pattern_problem(pattern: str) -> str | None:
    """Why compiling `pattern` would cost too much, in words for the model; None if it
    would not."""
    groups = [_Group()]
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        top = groups[-1]
        if char == "{":
            counted = _COUNTED.match(pattern, i)
            if counted is not None and (counted[1] or counted[3]):
                bound = max(int(counted[1] or 0), int(counted[3] or 0))
                if bound > MAX_REPEAT:
                    return (
                        f"The pattern repeats something {bound} times; at most {MAX_REPEAT} "
                        "repeats are searched. Use a shorter pattern."
                    )
                top.size += top.last * (bound - 1)
                top.last *= bound
                i = counted.end()
            else:  # a literal brace
                i = _atom(top, 1, i + 1)
        elif char == "\\":
            braced = _BRACED_ESCAPE.match(pattern, i)
            i = _atom(top, 1, braced.end() if braced else i + 2)
        elif char == "[":
            i = _atom(top, 1, _class_end(pattern, i))
        elif char == "(":
            groups.append(_Group())
            i += 1
        elif char == ")" and len(groups) > 1:
            closed = groups.pop()
            i = _atom(groups[-1], max(closed.size, 1), i + 1)
        elif char in "*+?":
            i += 1
        elif char == "|":
            top.last = 0
            i += 1
        else:
            i = _atom(top, 1, i + 1)
        if groups[-1].size > MAX_EXPANDED_SIZE:  # only the open group's size ever changes
            return (
                f"The pattern would expand to more than {MAX_EXPANDED_SIZE} pieces (counted "
                "repeats multiply). Use a shorter pattern."
            )
    return None


def _atom(group: _Group, size: int, after: int) -> int:
    group.size += size
    group.last = size
    return after


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class that starts at `start` (`[`), or the end."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a leading `]` is a literal
    depth = 1
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            depth += 1  # the regex module's nested sets, e.g. [[a-z]--[aeiou]]
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(pattern)
