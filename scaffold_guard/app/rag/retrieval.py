"""Retrieval over the notes folder, under the names it always had: a facade.

The parts live in their own modules: scaffold_guard/app/rag/sections.py (a note cut into heading
sections), aliases.py (the words a section means without writing them), query.py (a
question as safe search terms), index.py (the SQLite FTS5 index, its refresh and search)
and grounding.py (the grounding threshold, the notes a turn cites). New code imports from
those; this module keeps `from scaffold_guard.app.rag.retrieval import NotesIndex` and the other old
imports working.
"""

from scaffold_guard.app.rag.aliases import IP_ALIAS, alias_words
from scaffold_guard.app.rag.grounding import DEFAULT_GROUNDING_THRESHOLD, is_grounded, sources
from scaffold_guard.app.rag.index import (
    ALIAS_WEIGHT,
    BODY_WEIGHT,
    DEFAULT_REFRESH_INTERVAL_S,
    HEADING_WEIGHT,
    MAX_CACHED_COUNTS,
    MAX_FILE_BYTES,
    NotesIndex,
    RefreshReport,
    SkippedFile,
    require_fts5,
)
from scaffold_guard.app.rag.query import (
    MAX_QUERY_TERMS,
    MAX_TERM_CHARS,
    STOP_WORDS,
    match_expression,
    query_terms,
)
from scaffold_guard.app.rag.sections import MAX_SECTION_CHARS, Section, split_sections

__all__ = [
    "ALIAS_WEIGHT",
    "BODY_WEIGHT",
    "DEFAULT_GROUNDING_THRESHOLD",
    "DEFAULT_REFRESH_INTERVAL_S",
    "HEADING_WEIGHT",
    "IP_ALIAS",
    "MAX_CACHED_COUNTS",
    "MAX_FILE_BYTES",
    "MAX_QUERY_TERMS",
    "MAX_SECTION_CHARS",
    "MAX_TERM_CHARS",
    "STOP_WORDS",
    "NotesIndex",
    "RefreshReport",
    "Section",
    "SkippedFile",
    "alias_words",
    "is_grounded",
    "match_expression",
    "query_terms",
    "require_fts5",
    "sources",
    "split_sections",
]
