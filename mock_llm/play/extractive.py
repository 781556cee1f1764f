"""The extractive responder: an answer built from the request itself, with no model.

A flow step with `extract:` gets its content here: the sentences of the request's context
(tool messages, document blocks with a path-like attribute) that best match the last user
question, each quoted with its note, so a RAG app's tester sees whether the right context
was sent. With `read:` the step may first answer with that tool call for a note the
question names. See docs/mock_llm.md.

Deliberate choices:
- The rest of a system message is not context: an instruction that names a path as an
  example must not be quoted as an answer.
- The score is plain and deterministic (question words weighted by rarity, ties by the
  note's name then context order): the same request always gets the same answer.
- Bounded: at most MAX_CONTEXT_CHARS and MAX_QUESTION_CHARS are read, so a huge request
  costs linear time at most.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from guardrail.json_shapes import is_object, objects, string_field
from mock_llm.flows.model import Extract
from mock_llm.flows.trigger import last_user_text, message_text
from servekit.trigger_grammar import strip_triggers

MAX_CONTEXT_CHARS = 200_000
MAX_QUESTION_CHARS = 2_000
MAX_SENTENCE_CHARS = 400
"""A longer sentence is quoted cut to this length, with an ellipsis."""

_TAG = re.compile(r"<(?P<close>/?)(?P<tag>[A-Za-z][\w-]*)\b(?P<attrs>[^<>]*)>")
_NOTE_ATTR = re.compile(r"\b(?:path|source|file|name|title)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FENCE = re.compile(r"^(?:```|~~~)")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_ITEM = re.compile(r"^(?:[-*+>]\s+|\d+[.)]\s+|\|)")
_LEAD = re.compile(r"^(?:[-*+>]\s+|\d+[.)]\s+)+")
_INLINE = re.compile(r"[*`]+")
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_WORD = re.compile(r"\w+")
_STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "the", "their", "there",
    "this", "to", "was", "what", "when", "where", "which", "who", "why", "will", "with", "you",
    "your",
))  # fmt: skip


@dataclass(frozen=True)
class Sentence:
    text: str
    note: str | None
    position: int


def note_to_read(
    messages: Sequence[Mapping[str, Any]], offered: Collection[str], spec: Extract
) -> str | None:
    """The note the step's `read` tool should be called on first, or None (answer now)."""
    if spec.read is None or spec.read not in offered or _answered_by_tool(messages):
        return None
    terms = set(_terms(strip_triggers(last_user_text(messages))[:MAX_QUESTION_CHARS]))
    for text, note in _passages(messages):
        name: set[str] = set(_terms(PurePosixPath(note).stem)) if note else set()
        if text and name and name <= terms:
            return note
    return None


def _answered_by_tool(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a tool result came after the last user message."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return False
        if message.get("role") == "tool":
            return True
    return False


def extract_answer(messages: Sequence[Mapping[str, Any]], spec: Extract) -> str:
    """The answer to the last user question, quoted from the request's context."""
    question = strip_triggers(last_user_text(messages))[:MAX_QUESTION_CHARS]
    terms = set(_terms(question))
    sentences = _distinct(context_sentences(messages))
    if not terms or not sentences:
        return spec.fallback
    vocabulary = [set(_terms(s.text)) for s in sentences]
    frequency = Counter(term for words in vocabulary for term in words)
    weight = {t: math.log(1 + len(sentences) / frequency[t]) for t in terms if frequency[t]}
    named = {note: len(set(_terms(note)) & terms) for note in {s.note for s in sentences} if note}
    scored = [
        (sum(weight.get(t, 0.0) for t in words & terms), named.get(s.note or "", 0), -s.position, s)
        for s, words in zip(sentences, vocabulary, strict=True)
    ]
    best = sorted((row for row in scored if row[0] > 0), key=lambda row: row[:3], reverse=True)
    if not best:
        return spec.fallback
    quoted = [_quote(s) for *_, s in best[: spec.sentences]]
    return "\n".join([spec.preamble, *quoted])


def _distinct(sentences: list[Sentence]) -> list[Sentence]:
    """Each sentence text once, where it first came (an excerpt before the whole note)."""
    seen: set[str] = set()
    kept: list[Sentence] = []
    for sentence in sentences:
        if sentence.text not in seen:
            seen.add(sentence.text)
            kept.append(sentence)
    return kept


def context_sentences(messages: Sequence[Mapping[str, Any]]) -> list[Sentence]:
    """Every sentence of the request's context, in order, with its note when named."""
    sentences: list[Sentence] = []
    budget = MAX_CONTEXT_CHARS
    for text, note in _passages(messages):
        text = text[:budget]
        budget -= len(text)
        for unit in prose_units(text):
            for piece in _SENTENCE_END.split(unit):
                if len(_WORD.findall(piece)) >= 2:
                    sentences.append(Sentence(piece, note, len(sentences)))
        if budget <= 0:
            break
    return sentences


def prose_units(text: str) -> list[str]:
    """`text`'s paragraphs (wrapped lines joined), list items and table rows, as plain text.

    Markdown is read the way a person reads it: a paragraph's lines are one text, each list
    item and table row stands alone (a row's cells joined by commas), and what is not prose
    is left out: headings, fenced code, a table's header row and its rule.
    """
    units: list[str] = []
    current: list[str] = []
    lines = text.splitlines()

    def flush() -> None:
        joined = " ".join(" ".join(current).split())
        if joined:
            units.append(joined)
        current.clear()

    in_fence = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if _FENCE.match(stripped):
            flush()
            in_fence = not in_fence
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if in_fence or stripped.startswith("#") or _TABLE_RULE.match(stripped):
            flush()
            continue
        if not stripped:
            flush()
            continue
        if stripped.startswith("|") and _TABLE_RULE.match(following):
            flush()  # a header row: labels, not facts
            continue
        if _ITEM.match(stripped):
            flush()
            if stripped.startswith("|"):
                stripped = ", ".join(cell.strip() for cell in stripped.strip("|").split("|"))
        current.append(_LINK.sub(r"\1", _INLINE.sub("", _LEAD.sub("", stripped))))
    flush()
    return units


def _passages(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    """The context's passages: tool results, and document blocks of system/user messages."""
    call_notes: dict[str, str] = {}
    passages: list[tuple[str, str | None]] = []
    for message in messages:
        role = message.get("role")
        text = message_text(message.get("content"))
        if role == "assistant":
            call_notes.update(_call_notes(message.get("tool_calls")))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            passages.append((text, call_notes.get(call_id) if isinstance(call_id, str) else None))
        elif role in ("system", "user"):
            passages.extend(document_blocks(text))
    return passages


def document_blocks(text: str) -> list[tuple[str, str | None]]:
    """The bodies of `text`'s elements that name a note, with the note; one linear pass
    over the tags (an element left open runs to the end of the text)."""
    blocks: list[tuple[str, str | None]] = []
    inside: tuple[str, str, int] | None = None  # tag, note, where the body starts
    for tag in _TAG.finditer(text):
        if inside is None:
            named = None if tag["close"] else _NOTE_ATTR.search(tag["attrs"])
            if named:
                inside = (tag["tag"], named[1] or named[2], tag.end())
        elif tag["close"] and tag["tag"] == inside[0]:
            blocks.append((text[inside[2] : tag.start()], inside[1]))
            inside = None
    if inside is not None:
        blocks.append((text[inside[2] :], inside[1]))
    return blocks


def _call_notes(tool_calls: object) -> dict[str, str]:
    """The note each tool call names in its arguments (`path`, `file` or `name`), by id."""
    notes: dict[str, str] = {}
    for call in objects(tool_calls):
        function = call.get("function")
        call_id = call.get("id")
        if not is_object(function) or not isinstance(call_id, str):
            continue
        try:
            arguments: object = json.loads(string_field(function, "arguments") or "{}")
        except ValueError:
            continue
        for key in ("path", "file", "name"):
            value = string_field(arguments, key)
            if value:
                notes[call_id] = value
                break
    return notes


def _terms(text: str) -> list[str]:
    words = (word.lower() for word in _WORD.findall(text))
    return [_stem(w) for w in words if w not in _STOP_WORDS and (len(w) > 1 or w.isdigit())]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _quote(sentence: Sentence) -> str:
    text = sentence.text
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"
    return f"- {text} (source: {sentence.note})" if sentence.note else f"- {text}"
