"""A markdown note cut into heading sections, the unit the notes index stores. Pure.

Deliberate choices a reader might want to "fix":
- Sections, not files or fixed windows. Every ATX heading (`#` to `######`) starts a section
  that runs to the next heading; `#` lines inside fenced code blocks are shell comments,
  not headings. Text before the first heading becomes a section titled with the note's
  title. A section longer than `MAX_SECTION_CHARS` is cut on paragraph boundaries (then
  lines, then characters, only if a single paragraph or line is that long).
- A section's `trail` is its heading after the open parent headings ("Backups /
  Schedule"): the index searches the trail, so a "Schedule" section still matches a
  question about backups (scaffold_guard/app/rag/index.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_SECTION_CHARS = 1500

_TITLE_SEPARATOR = " / "
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Section:
    """One indexed piece of a note: its own heading, the heading trail, and its text."""

    heading: str
    trail: str
    body: str


def split_sections(
    text: str, fallback_title: str, max_chars: int = MAX_SECTION_CHARS
) -> list[Section]:
    """Cut a markdown note into heading sections; see the module docstring for the rules."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    headings = _find_headings(lines)
    title = next((h for _, _, h in headings if h), fallback_title)

    sections: list[Section] = []
    # the text before the first heading belongs to the note's title
    first = headings[0][0] if headings else len(lines)
    _add_section(sections, title, title, lines[:first], max_chars)
    stack: list[tuple[int, str]] = []  # (level, heading) of the open headings
    for n, (i, level, text) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else len(lines)
        heading = text or title
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        trail = _TITLE_SEPARATOR.join(h for _, h in stack)
        _add_section(sections, heading, trail, lines[i + 1 : end], max_chars)
    return sections


def _find_headings(lines: Sequence[str]) -> list[tuple[int, int, str]]:
    """(line index, level, heading text) of every ATX heading outside fenced code."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        heading_match = _HEADING.match(line)
        if heading_match:
            found.append((i, len(heading_match.group(1)), (heading_match.group(2) or "").strip()))
    return found


def _add_section(
    sections: list[Section], heading: str, trail: str, lines: Sequence[str], max_chars: int
) -> None:
    body = "\n".join(lines).strip("\n").rstrip()
    if not body.strip():
        return
    for piece in _split_long(body, max_chars):
        sections.append(Section(heading=heading, trail=trail, body=piece))


def _split_long(body: str, max_chars: int) -> list[str]:
    """Pieces of at most max_chars: whole paragraphs where possible, then lines, then cuts."""
    if len(body) <= max_chars:
        return [body]
    units: list[tuple[str, str]] = []  # (text, separator that joined it to the previous one)
    for paragraph in _PARAGRAPH_BREAK.split(body):
        if len(paragraph) <= max_chars:
            units.append((paragraph, "\n\n"))
            continue
        for n, line in enumerate(paragraph.split("\n")):
            separator = "\n\n" if n == 0 else "\n"
            cuts = [line[k : k + max_chars] for k in range(0, len(line), max_chars)] or [""]
            units.extend((cut, separator if k == 0 else "") for k, cut in enumerate(cuts))
    pieces: list[str] = []
    current = ""
    for text, separator in units:
        if current and len(current) + len(separator) + len(text) > max_chars:
            pieces.append(current)
            current = text
        else:
            current = f"{current}{separator}{text}" if current else text
    pieces.append(current)
    return [p.strip("\n") for p in pieces if p.strip()]
