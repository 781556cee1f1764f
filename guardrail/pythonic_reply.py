"""A reply that is nothing but a Python list of calls: Llama 3.2 to 4's calls, unmarked.

Meta's Llama 3.2 and Llama 4 prompt formats ask the model to answer a function call as the
whole reply, `[func_name1(param=value, ...), func_name2(...)]`, with no other text (vLLM's
`pythonic` and `llama4_pythonic` parsers; SGLang's `pythonic`). No marker says it is a
call, so, like guardrail/json_reply.py, `PythonicCalls` reads the reply from its first
character while it can still be nothing but such a list, and says so.

Deliberate choices a reader might want to "fix":
- The reply's shape is checked as it streams (`[`, a dotted name, `(`, ..., `)`, then `,`
  or `]`; or Llama 3.1's built-in `brave_search.call(...)` alone, BUILT_IN_CALLS), so prose
  that merely starts with `[` (a link, `[1]`) or with a word is decided at once; each
  call is then parsed with `ast` (never evaluated): keyword arguments only, each value a
  literal, as the parsers accept them.
- Only the whole reply counts, held at most json_reply.HOLD_LIMIT characters; a list a user
  asked for is shown unless it is exactly such calls.
- Python's own parser refuses input nested past its limit with a SyntaxError, which is
  read as "not calls": hostile nesting cannot make it recurse without bound.
"""

from __future__ import annotations

import ast
import re
from typing import Literal

from guardrail.json_reply import CharReader
from guardrail.patterns import BLANKS

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
