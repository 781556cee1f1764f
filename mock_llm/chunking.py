"""Cut a text into stream chunks. Joining the chunks always gives the text back exactly."""

from __future__ import annotations

import re

from mock_llm.flows import Chunking

_WORD = re.compile(r"\s*\S+|\s+")


def split(text: str, chunking: Chunking) -> list[str]:
    """The chunks of `text`: whole, one code point each, word by word, or N code points each.

    Words keep their leading whitespace, as model tokens do (" world"), and a whitespace
    tail becomes its own chunk. Empty text gives no chunks.
    """
    if not text:
        return []
    if chunking.mode == "whole":
        return [text]
    if chunking.mode == "char":
        return list(text)
    if chunking.mode == "word":
        return _WORD.findall(text)
    size = chunking.size
    return [text[i : i + size] for i in range(0, len(text), size)]
