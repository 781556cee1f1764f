"""Whether a streamed answer so far ends inside markdown code. Pure.

The filter leaves plain-text markers (`<tool_call>`, `[TOOL_CALLS]`) alone inside code, so a
markdown example of a format is not eaten (docs/contract.md, the streaming filter, rule 6).
`CodeContext.feed(text)` reads the answer piece by piece; `open` says whether what came
last is inside a fenced block (``` or ~~~ lines) or an inline code span on its line.

Deliberate choice a reader might want to "fix": inline code is read one line at a time, and
a backtick run with no closing run keeps the rest of its line inside code, so a stray
backtick lets a plain-text leak on that line through rather than risk eating an example.
"""

from __future__ import annotations

import re

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
