"""What a grep pattern from the model would cost to compile, judged before it is compiled.

Grep's time budget bounds searching, not compiling: `regex` expands counted repeats at
compile time, with the GIL held and no timeout, so `a{10000003}` takes seconds and
gigabytes. `pattern_problem` reads the pattern in one linear pass and refuses a repeat
bound over MAX_REPEAT or an expanded size over MAX_EXPANDED_SIZE. `*`, `+` and `?` cost
nothing to compile.

Deliberate choices:
- The reading is conservative (alternatives add, group prefixes count as atoms): real
  search patterns are far below the limits.
- It does not validate the pattern: a bad one is the compiler's to report, and grep then
  searches the text literally.
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
