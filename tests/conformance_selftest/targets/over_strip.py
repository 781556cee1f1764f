"""over-strip: strips look-alikes too: any `<|word|>` token and the bare words tool_call*.

After the real filter, a second pass removes every `<|...|>` token of word characters (an
unknown `<|some_other_token|>`, a lone `<|tool_call_end|>`) and every whitespace-led word
starting with tool_call (tool_call, tool_call_start). It works on whole words: text is held
back to the last whitespace until the request ends. Its removals are not counted in
scaffold_stripped (which stays the real filter's count), and a partial marker at the end
(`<|tool_call_st`) is left alone, so only look-alike text is altered.

Must fail: G7 (the lookalike flow's text is changed), and nothing else.
"""

from __future__ import annotations

import re

from .base import BaseTarget, TextFilter, WrappedFilter

MODE = "over-strip"
BREAKS = ("G7",)
ALSO_FAILS: tuple[str, ...] = ()

LOOK_ALIKE = re.compile(r"<\|\w+\|>|(?<!\S)tool_call\w*")
LAST_SPACE = re.compile(r"\s(?=\S*\Z)")


class OverStrip(WrappedFilter):
    """The real filter, then the look-alikes removed, one whole word at a time."""

    def __init__(self) -> None:
        super().__init__()
        self._pending = ""

    def feed(self, chunk: str) -> str:
        text = self._pending + self._inner.feed(chunk)
        space = LAST_SPACE.search(text)
        cut = space.end() if space else 0  # a match never holds whitespace: cut after one
        self._pending = text[cut:]
        return LOOK_ALIKE.sub("", text[:cut])

    def flush(self) -> str:
        text, self._pending = self._pending + self._inner.flush(), ""
        return LOOK_ALIKE.sub("", text)


class Target(BaseTarget):
    MODE = MODE

    def new_filter(self) -> TextFilter:
        return OverStrip()
