"""A user's question as search terms: the words worth searching for, as a safe FTS5 query.

Pure. Deliberate choices a reader might want to "fix":
- User text never reaches FTS5 syntax. It is cut into alphanumeric words, stop-words are
  dropped and each remaining word is quoted and ORed, so quotes, `*`, `NEAR`, `AND`,
  parentheses or column filters in a question are plain words or nothing.
- A mock_llm trigger (`[[mock:FLOW#KEY]]`) in a question is not part of it: its words
  would count as words the notes never use and pull a real question under the grounding
  threshold, so tests and the conformance kit would see other modes than users do.
  `servekit.trigger_grammar.strip_triggers` decides what a trigger is (typos, unclosed
  ones and any case included), on the grammar the mock reads too, so the two sides cannot
  disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from servekit.trigger_grammar import strip_triggers

MAX_QUERY_TERMS = 32
MAX_TERM_CHARS = 64

_STOP_WORDS_TEXT = """
    a about above after again all am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me
    more most my myself no nor not now of off on once only or other our ours out over own
    same she should so some such than that the their theirs them then there
    these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself
    also get give got help know let like need please show tell us want explain
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

WORD = re.compile(r"[^\W_]+")
"""A word as search reads text: a run of letters and digits."""


def query_terms(query: str) -> list[str]:
    """The words of a user question that are worth searching for, lower-cased, in order."""
    terms: list[str] = []
    for word in WORD.findall(strip_triggers(query).lower()):
        if word in STOP_WORDS or word in terms or len(word) > MAX_TERM_CHARS:
            continue
        if len(word) == 1 and not word.isdigit():
            continue  # the "s" of "what's", the "t" of "don't"
        terms.append(word)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms


def match_expression(query: str) -> str | None:
    """A safe FTS5 MATCH expression for free user text, or None if nothing is left to search."""
    terms = query_terms(query)
    return or_expression(terms) if terms else None


def or_expression(terms: Sequence[str]) -> str:
    """The terms quoted and ORed: an FTS5 MATCH expression that matches any of them."""
    return " OR ".join(quote_term(term) for term in terms)


def quote_term(term: str) -> str:
    """One term as an FTS5 string."""
    # Terms hold only letters and digits, so there is no quote to escape; doubling keeps
    # that true even if the word pattern changes.
    return '"' + term.replace('"', '""') + '"'
