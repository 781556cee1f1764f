"""Strip a model's raw tool-call scaffolding from streamed answer text, chunk by chunk.

The guardrail's core: a pure, incremental filter. `feed(chunk)` returns the text safe to
show now; `flush()` what was held back at the end. Which markup counts is data
(guardrail/registries.py); code context is guardrail/code_context.py. The rules are
docs/contract.md's "The streaming filter".

Deliberate choices a reader might want to "fix":
- Text around a stripped region is not re-joined and re-scanned: a marker that exists only
  once a token is taken out was never in the model's output, and catching it would need
  unbounded hold-back.
- Lone end markers are not stripped (G7), although vLLM's LFM2 parser strips orphan
  `<|tool_call_end|>`: a look-alike must never be eaten.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from guardrail.code_context import CodeContext
from guardrail.harmony import HarmonyReader, Routed
from guardrail.patterns import BLANKS, TRAILER_SPACE, Pattern, Registry
from guardrail.registries import DEFAULT_REGISTRY
from guardrail.reply_calls import WHOLE_REPLY_KINDS, reader_for
from guardrail.shapes import Chars, Compiled, Lit, alt, compiled, seq

PREVIEW_CHARS = 200
_NEVER = r"(?!)"  # a regex that matches nothing
_WORD = re.compile(r"\w")
CUT_OFF_AFTER = ("", "\n", ".", "!", "?", ":")
"""What an opener cut off by the answer's end may follow to count as a call: nothing, a line
break, or a sentence's end with no space (prose writes a space before a tag it names)."""
_JSON_CHARS = '{}[]"\\'
"""What JSON tracking reads inside a body: nesting, and where strings start."""
_STRING_STOP = re.compile(r'["\\]')
_NON_BLANK = re.compile(f"[^{re.escape(BLANKS)}]")
Verdict = Literal["open", "text", "undecided"]
JsonState = Literal["off", "pending", "on"]


class _Matcher:
    """What a registry compiles to: one opener regex, the prefix sets for hold-back."""

    def __init__(self, registry: Registry) -> None:
        starts = [p.start for p in registry]
        if len(set(starts)) != len(starts):
            raise ValueError("two patterns share an opener")
        self.by_start = {p.start: p for p in registry}
        for a in starts:
            for b in starts:
                if a != b and a in b and not _walled_off(self.by_start[a], b):
                    how = "a prefix of" if b.startswith(a) else "inside"
                    raise ValueError(f"opener {a!r} is {how} {b!r}: ambiguous")
        self.longest = max(len(s) for s in starts)
        self.opener = re.compile(trie_pattern(starts))
        firsts = sorted({s[0] for s in starts})
        self.first = re.compile("[" + "".join(re.escape(c) for c in firsts) + "]")
        anywhere = [p for p in registry if p.boundary == "any"]
        self.bounded = tuple(p for p in registry if p.boundary != "any")
        """Patterns that may begin only at a word start or at the answer's start."""
        self.first_char = firsts[0] if len(firsts) == 1 and not self.bounded else None
        self.special_prefixes = _proper_prefixes(p.start for p in anywhere if p.special)
        self.plain_prefixes = _proper_prefixes(p.start for p in anywhere if not p.special)
        self.plain = any(not p.special for p in registry)
        """Whether code fences matter: a plain marker (even a 1-char one, with no prefix)."""
        self.tracks = bool(self.bounded) or any(
            p.hint is not None and p.kind != "token" for p in registry
        )
        """Whether a filter keeps the character before its held text: for bounded patterns,
        and for an opener with a hint, which the answer's end may cut off (`_cut_off`)."""


def _walled_off(inner: Pattern, outer: str) -> bool:
    """Whether `inner`'s opener, found inside the opener `outer`, can never open there: it
    begins only at a word or the answer's start, and each place it occurs in `outer` comes
    right after a letter, digit or `_` (gpt-oss's `analysis` inside `assistantanalysis`).
    Anything else (a prefix above all) would be ambiguous: one opener held inside another."""
    places = [i for i in range(len(outer)) if outer.startswith(inner.start, i)]
    return inner.boundary != "any" and all(
        i > 0 and _WORD.match(outer[i - 1]) is not None for i in places
    )


def trie_pattern(markers: Iterable[str]) -> str:
    """A regex that finds any of `markers`, the longest where several start at one place,
    built as a trie of their common prefixes: Python's `re` tries an alternation's branches
    one by one, so at each `<` in a text a flat list of 60 openers costs 60 attempts, the
    trie a few."""
    trie: dict[str, dict[str, Any]] = {}
    for marker in markers:
        node = trie
        for char in marker:
            node = node.setdefault(char, {})
        node[""] = {}  # a marker ends here

    def pattern(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + pattern(node[char]) for char in sorted(node) if char]
        if not branches:
            return ""
        if len(branches) == 1 and "" not in node:
            return branches[0]
        group = "(?:" + "|".join(branches) + ")"
        return group + "?" if "" in node else group  # greedy: the longer marker first

    return pattern(trie) or _NEVER


def _proper_prefixes(markers: Iterable[str]) -> frozenset[str]:
    return frozenset(m[:i] for m in markers for i in range(1, len(m)))


@functools.lru_cache(maxsize=64)
def _matcher(registry: Registry) -> _Matcher:
    return _Matcher(registry)


def _markers(registry: Registry) -> Registry:
    """The patterns found by their markers: all but a whole reply of calls (json_reply,
    pythonic_reply) and harmony's messages (read by their own reader, in front of the rest)."""
    return tuple(p for p in registry if p.kind not in (*WHOLE_REPLY_KINDS, "harmony"))


def _after_start(markers: Registry) -> Registry | None:
    """The markers once the answer has begun: all but those that open only at its start
    (None: there are none to drop, or none would be left)."""
    later = tuple(p for p in markers if p.boundary != "start")
    return later if later and len(later) < len(markers) else None


@dataclass(frozen=True)
class _Plan:
    """What a registry compiles to, once: the matcher, the markers once the answer has
    begun, and whether a whole-reply reader and harmony's reader are needed. A filter is
    made for every stream: it looks its registry up once (patterns hash once, patterns.py)."""

    matcher: _Matcher
    later: Registry | None
    reads_reply: bool
    reads_harmony: bool


@functools.lru_cache(maxsize=64)
def _plan(registry: Registry) -> _Plan:
    markers = _markers(registry)
    if not markers:
        raise ValueError("a registry needs a pattern with a marker")
    kinds = {p.kind for p in registry}
    return _Plan(
        matcher=_matcher(markers),
        later=_after_start(markers),
        reads_reply=bool(kinds & set(WHOLE_REPLY_KINDS)),
        reads_harmony="harmony" in kinds,
    )


@dataclass(frozen=True)
class _Inside:
    """How a span is read from the inside: `search` finds what may end it (its end markers;
    a braced body's braces and quotes; a JSON body's nesting and string quotes, and its
    skips), `prefixes` of those are held back (the longest is `longest` - 1 long), and a
    chunk without any of `firsts` cannot end it or change its state. `plain` finds the end
    markers alone (a `leading` body that is not JSON), `ends` are they."""

    search: re.Pattern[str]
    longest: int
    prefixes: frozenset[str]
    firsts: re.Pattern[str]
    plain: re.Pattern[str] = re.compile(_NEVER)
    ends: frozenset[str] = frozenset()


def _chars(markers: Iterable[str]) -> re.Pattern[str]:
    firsts = "".join(re.escape(c) for c in sorted({m[0] for m in markers}))
    return re.compile(f"[{firsts}]" if firsts else _NEVER)


def _reading(
    words: Iterable[str], extra: Iterable[str] = (), extra_firsts: Iterable[str] = ()
) -> tuple[re.Pattern[str], int, frozenset[str], re.Pattern[str]]:
    """What reads `words` inside a span: a search for them (longest first) and the `extra`
    regex alternatives, the longest word's length, the words' proper prefixes (held back),
    and the first characters of the words and of `extra_firsts`."""
    words = sorted(words, key=len, reverse=True)
    search = re.compile("|".join([*(re.escape(w) for w in words), *extra]) or _NEVER)
    longest = max((len(w) for w in words), default=0)
    return search, longest, _proper_prefixes(words), _chars([*words, *extra_firsts])


@functools.lru_cache(maxsize=256)
def _inside(pattern: Pattern) -> _Inside:
    if pattern.kind == "braced":
        return _Inside(*_reading(pattern.quotes, (r"\{", r"\}"), "{}"))
    ends = frozenset(pattern.ends)
    plain = _reading(ends)[0]
    if pattern.quotes:  # a span whose quotes make what they hold data
        return _Inside(*_reading((*ends, *pattern.quotes)), plain, ends)
    if pattern.kind != "json_value" and pattern.json_strings == "never":
        return _Inside(*_reading(ends), plain, ends)
    json_chars = f"[{re.escape(_JSON_CHARS)}]"
    return _Inside(*_reading((*ends, *pattern.skips), (json_chars,), _JSON_CHARS), plain, ends)


_NOTHING_INSIDE = _Inside(re.compile(_NEVER), 0, frozenset(), re.compile(_NEVER))


@functools.lru_cache(maxsize=64)
def _trailer(pattern: Pattern) -> Compiled:
    """Blanks, then one of the pattern's trailers."""
    options = alt(*(Lit(t) for t in pattern.trailers))
    return compiled(seq(Chars(r"[ \t\r\n]", 0, TRAILER_SPACE), options))


class ScaffoldingFilter:
    """Incremental scaffolding stripper for one stream. Not reusable after flush()."""

    __slots__ = (
        "_at_start",
        "_braces",
        "_escaped",
        "_fast",
        "_fences",
        "_flushed",
        "_harmony",
        "_held",
        "_inside",
        "_json",
        "_last",
        "_later",
        "_matcher",
        "_preview",
        "_quote",
        "_reasoning",
        "_reply",
        "_span",
        "_track",
        "_trailing",
        "_trailing_first",
        "first_span",
        "stripped_chars",
        "stripped_spans",
    )

    def __init__(self, registry: Registry = DEFAULT_REGISTRY) -> None:
        plan = _plan(registry)
        self._matcher = plan.matcher
        self._later = plan.later  # the markers once the answer has begun
        # a whole reply of JSON calls (Llama's): read from its start until it is decided
        self._reply = reader_for(registry) if plan.reads_reply else None
        # gpt-oss's messages: routed to the answer (read on below), the reasoning, or away
        self._harmony = HarmonyReader() if plan.reads_harmony else None
        self._reasoning: list[str] = []
        self._held = ""
        self._span: Pattern | None = None
        self._inside = _NOTHING_INSIDE
        self._braces = 0  # a braced or JSON body's open braces (and a JSON body's brackets)
        self._quote = ""  # the quote a braced or JSON body is inside, if any
        self._escaped = False  # a JSON string's backslash ended the last chunk
        self._json: JsonState = "off"  # whether the open span's body is read as JSON
        self._trailing: Pattern | None = None  # a span just ended; its trailer may follow
        self._trailing_first = False  # ... and that span was the first one stripped
        self._preview = ""
        self._fences = CodeContext() if self._matcher.plain else None
        self._track = self._matcher.tracks  # keep _last and _at_start up to date
        self._last = ""  # the last character of the stream before the held text
        self._at_start = True  # nothing of the stream came before the held text
        # The one character every opener starts with, while nothing is held, open or being
        # read: a chunk without it is shown as it came. `""` when there is no such fast
        # path (`""` is in every chunk, so the test costs no None check).
        self._fast = ""
        self._set_clean()
        self._flushed = False
        self.stripped_chars = 0  # characters taken out so far
        self.stripped_spans = 0  # spans and tokens taken out so far
        self.first_span = ""  # the first of them, cut to PREVIEW_CHARS characters

    @property
    def held(self) -> str:
        """The text held back right now (what could still become markup)."""
        held = self._reply.text if self._reply is not None else self._held
        return held + self._harmony.held if self._harmony is not None else held

    @property
    def quiet_char(self) -> str | None:
        """The one character whose absence from a chunk makes feed() return the chunk as it
        is, with nothing read or changed (nothing held, open or being read, one opener's
        first character); None when no such character says it now. What lets a caller
        pass text on without feeding it, as the guard proxy passes a clean read's bytes."""
        return self._fast or None

    @property
    def may_turn_quiet(self) -> bool:
        """Whether quiet_char can name a character once nothing is held or open: the
        openers read now share one first character, and no code fence is read."""
        single = self._matcher.first_char if self._fences is None and not self._track else None
        return single is not None and (self._harmony is None or single == "<")

    def take_reasoning(self) -> str:
        """The reasoning routed out of the answer text since the last call (harmony's
        `analysis` channel), never filtered (G9); '' when there is none."""
        if not self._reasoning:
            return ""
        text = "".join(self._reasoning)
        self._reasoning.clear()
        return text

    def feed(self, chunk: str) -> str:
        """The part of the stream that is safe to show now, `chunk` included."""
        if self._fast not in chunk:  # `""` (no fast path) is in every chunk
            return chunk  # nothing held, open or being read, and no opener can start here
        harmony = self._harmony
        if harmony is not None and (
            not harmony.idle
            or ("<" in chunk and (chunk[-1] == "<" or ("|" in chunk and "<|" in chunk)))
        ):  # every harmony token starts `<|`: one-character tests first, they cost far less
            return self._routed(harmony.feed(chunk))
        return self._feed_answer(chunk)

    def _routed(self, pieces: Routed) -> str:
        """Harmony's pieces: answer text read on, reasoning kept for take_reasoning(),
        markup counted as stripped."""
        out: list[str] = []
        for route, text in pieces:
            if route == "answer":
                out.append(self._feed_answer(text))
            elif route == "reasoning":
                self._reasoning.append(text)
            elif route == "stripped":
                self._strip(text)
            else:
                self._count_span()
        self._set_clean()
        return "".join(out)

    def _feed_answer(self, chunk: str) -> str:
        if self._reply is not None:
            return self._feed_reply(chunk)
        if self._fast not in chunk:
            return chunk
        return self._feed(chunk)

    def _feed_reply(self, chunk: str) -> str:
        """While the reply may still be nothing but JSON calls, all of it is held; once it
        cannot be, it is read as any text from its start."""
        reply = self._reply
        assert reply is not None
        if reply.feed(chunk) == "maybe":
            return ""
        self._reply = None
        return self._feed(reply.text)

    def _end_reply(self) -> str:
        """At the end: a reply of nothing but calls is stripped whole; any other held reply
        is read as text."""
        reply, self._reply = self._reply, None
        if reply is None or not reply.text:
            return ""
        if not reply.complete():
            return self._feed(reply.text)
        self._strip(reply.text)
        self._close_span()
        self.stripped_spans += reply.calls - 1
        return ""

    def _feed(self, chunk: str) -> str:
        """Cheaper paths first, then a full scan of the held text and the chunk."""
        if self._flushed:  # flush() turned the fast path off, so every feed gets here
            raise RuntimeError("ScaffoldingFilter.feed() after flush(): use a fresh filter")
        held = self._held
        if self._span is not None:
            if self._escaped:  # the chunk's first character is a JSON string's escaped one
                pass
            elif not held and self._json != "pending":
                if self._inside.firsts.search(chunk) is None:
                    self._span_text(chunk)  # nothing could end the span: all of it is span
                    self._passed(chunk)
                    return ""
            elif held + chunk in self._inside.prefixes:
                self._held = held + chunk  # still an end marker's prefix: hold it all
                return ""
        elif self._trailing is None:
            if not held:
                if self._matcher.first.search(chunk) is None:
                    self._feed_fences(chunk)
                    self._passed(chunk)
                    return chunk
            elif held + chunk in self._matcher.special_prefixes:
                self._held = held + chunk  # still a special opener's prefix: hold it all
                return ""
        return self._scan(held + chunk)

    def _passed(self, text: str) -> None:
        """`text` went by without a scan: what boundaries need to know of it."""
        if self._track and text:
            self._moved_past(text[-1])

    def _moved_past(self, last: str) -> None:
        """Stream text ending with `last` went by: the answer has begun."""
        self._last, self._at_start = last, False
        if self._later is not None:
            self._begun()

    def _begun(self) -> None:
        """The answer has begun: patterns that open only at its start (gpt-oss's residue
        `analysis`) can no longer match, so the matcher drops them, and prose with their
        first letters costs no scan."""
        assert self._later is not None
        self._matcher, self._later = _matcher(self._later), None
        if not self._matcher.plain:
            self._fences = None
        self._track = self._matcher.tracks
        self._set_clean()

    def _set_clean(self) -> None:
        """Outside any span with nothing held (and no reply or harmony message being read),
        a chunk with no opener's first character is returned as it is; with one first
        character and no fences, by a bare `in` test in feed(). Harmony's tokens all start
        with `<`, so with harmony read that test holds only when that character is `<`."""
        harmony = self._harmony
        clean = (
            self._span is None
            and not self._held
            and self._trailing is None
            and self._reply is None
            and (harmony is None or harmony.idle)
        )
        single = self._matcher.first_char if self._fences is None and not self._track else None
        if harmony is not None and single != "<":
            single = None
        self._fast = single if clean and single is not None else ""

    def flush(self) -> str:
        """At stream end: held text is read as final (a partial opener, an undecided hint or
        a partial trailer is text); an open span is stripped to the end.

        A second flush returns ''; a feed after flush is an error.
        """
        if self._flushed:
            return ""
        routed = self._routed(self._harmony.flush()) if self._harmony is not None else ""
        replied = self._end_reply()
        self._flushed = True
        held, self._held = self._held, ""
        out = self._scan(held, final=True)
        if self._span is not None:
            self._close_span()
        self._trailing = None
        self._fast = ""
        return routed + replied + out

    # --- scanning ------------------------------------------------------------------------

    def _scan(self, text: str, final: bool = False) -> str:
        """Read `text` (the held text and a new chunk): what may be shown, and what to hold.
        `final`: no more text will come, so nothing is held."""
        out: list[str] = []
        pos = 0
        while True:
            if self._span is not None:
                end, read = self._span_end(text, pos, final)
                if end is None:
                    keep = len(text) if final else self._hold_inside(text, read)
                    self._span_text(text[pos:keep])
                    break
                self._span_text(text[pos:end], ended=True)
                pos = end
                self._close_span()
                continue
            if self._trailing is not None:
                after = self._after_trailer(text, pos, final)
                if after is None:
                    keep = pos  # blanks and a partial trailer: hold them
                    break
                pos = after
                continue
            match = self._matcher.opener.search(text, pos)
            if match is None:
                keep = len(text) if final else self._hold_outside(text, pos)
                self._emit(out, text[pos:keep])
                break
            start = match.start()
            if not final and start > len(text) - self._matcher.longest:
                # An opener found in the tail may sit inside the prefix of a longer one that
                # began before it (an inner opener walled off there): hold from that prefix.
                held_from = self._hold_outside(text, pos)
                if held_from < start:
                    self._emit(out, text[pos:held_from])
                    keep = held_from
                    break
            pattern = self._matcher.by_start[match.group()]
            self._emit(out, text[pos:start])
            verdict = self._verdict(pattern, text, start, match.end(), final)
            if verdict == "undecided":
                keep = start
                break
            if verdict == "text":  # scanned on from its second character, so an opener
                self._emit(out, text[start])  # overlapping its tail is still found
                pos = start + 1
                continue
            pos = match.end()
            self._open(pattern, match.group())
        self._held = text[keep:]
        if self._track and keep:
            self._moved_past(text[keep - 1])
        self._set_clean()
        return "".join(out)

    def _emit(self, out: list[str], text: str) -> None:
        out.append(text)
        self._feed_fences(text)

    def _feed_fences(self, text: str) -> None:
        if self._fences is not None:
            self._fences.feed(text)

    def _verdict(self, pattern: Pattern, text: str, start: int, after: int, final: bool) -> Verdict:
        """Whether the opener at `start` (its marker ends at `after`) opens its pattern."""
        if pattern.boundary == "word":
            before = text[start - 1] if start else self._last
            if before and _WORD.match(before):
                return "text"
        elif pattern.boundary == "start" and (start or not self._at_start):
            return "text"
        if not pattern.special and self._fences is not None and self._fences.open:
            return "text"  # a plain marker in a code block is an example
        if pattern.hint is not None:
            hint = compiled(pattern.hint)
            if hint.full.match(text, after) is None:
                if not final and hint.viable.fullmatch(text, after) is not None:
                    return "undecided"
                if (
                    final
                    and hint.viable.fullmatch(text, after)
                    and self._cut_off(pattern, text, start, after)
                ):
                    return "open"
                return "text"
        return "open"

    def _cut_off(self, pattern: Pattern, text: str, start: int, after: int) -> bool:
        """Whether the opener at `start`, whose hint the answer's end cut short, is a call
        the end cut off: at a line's start or glued to a sentence's end, not after a space
        (`I will check.\n<tool_call>`, `Let me look.<tool_call>`, `\n<tool_call>gr`). G8: a
        complete start marker with no end is stripped through the end; `the tag is
        <tool_call>` is prose."""
        if pattern.kind == "token" or pattern.boundary != "any":
            return False  # a residue word (`analysis`) alone is prose
        before = text[start - 1] if start else ("" if self._at_start else self._last)
        return before in CUT_OFF_AFTER

    def _hold_outside(self, text: str, pos: int) -> int:
        """Where the held-back suffix starts: the longest one that is an opener's prefix."""
        matcher = self._matcher
        window = max(pos, len(text) - matcher.longest + 1)
        for candidate in matcher.first.finditer(text, window):
            index = candidate.start()
            suffix = text[index:]
            if suffix in matcher.special_prefixes:
                return index
            if suffix in matcher.plain_prefixes and not self._fenced_at(text, pos, index):
                return index
            if any(self._may_begin(p, suffix, text, pos, index) for p in matcher.bounded):
                return index
        return len(text)

    def _may_begin(self, pattern: Pattern, suffix: str, text: str, pos: int, index: int) -> bool:
        """Whether `suffix`, at `index`, could still become `pattern`'s opener."""
        if len(suffix) >= len(pattern.start) or not pattern.start.startswith(suffix):
            return False
        if pattern.boundary == "word":
            before = text[index - 1] if index else self._last
            if before and _WORD.match(before):
                return False
        elif index or not self._at_start:
            return False
        return pattern.special or not self._fenced_at(text, pos, index)

    def _fenced_at(self, text: str, pos: int, index: int) -> bool:
        if self._fences is None:
            return False
        probe = self._fences.copy()
        probe.feed(text[pos:index])
        return probe.open

    def _hold_inside(self, text: str, pos: int) -> int:
        """Where the held-back suffix starts inside a span: a prefix of one of its ends (or of
        a braced body's quotes)."""
        inside = self._inside
        for candidate in inside.firsts.finditer(text, max(pos, len(text) - inside.longest + 1)):
            if text[candidate.start() :] in inside.prefixes:
                return candidate.start()
        return len(text)

    def _span_end(self, text: str, pos: int, final: bool) -> tuple[int | None, int]:
        """Where the open span ends in `text` (after its end marker or closing brace), or
        None; and where reading stopped (a braced body's tokens are not read twice)."""
        assert self._span is not None
        if self._json == "pending":  # a `leading` body: JSON when it begins with { or [
            found = _NON_BLANK.search(text, pos)
            if found is None:
                return None, len(text)
            self._json = "on" if text[found.start()] in "{[" else "off"
        if self._json == "on":
            return self._json_end(text, pos, final)
        braced = self._span.kind == "braced"
        if not braced and not self._span.quotes:
            match = self._inside.plain.search(text, pos)
            return (None, pos) if match is None else (match.end(), match.end())
        while True:
            if self._quote:  # inside a quote only the same quote ends it
                found = text.find(self._quote, pos)
                if found < 0:
                    return None, pos
                pos, self._quote = found + len(self._quote), ""
                continue
            match = self._inside.search.search(text, pos)
            if match is None:
                return None, pos
            token, pos = match.group(), match.end()
            if not braced:  # a span with quotes: its end, or a quote opening
                if token in self._inside.ends:
                    return pos, pos
                self._quote = token
            elif token == "{":
                self._braces += 1
            elif token != "}":
                self._quote = token
            elif self._braces:  # a `}` before any `{` is body text
                self._braces -= 1
                if not self._braces:
                    return pos, pos

    def _json_end(self, text: str, pos: int, final: bool) -> tuple[int | None, int]:
        """`_span_end` for a body read as JSON: an end marker ends it outside a string (a
        `json_value` body ends where its first object or array closes); a string is read to
        its closing quote, backslash escapes included, across chunks. Outside a string,
        nothing from `held` on is read: it may begin an end marker or a skip (DeepSeek's
        escaped closer cut after its backslash, a JSON character), so it is read once,
        whole, with the next chunk."""
        inside, value = self._inside, self._span is not None and self._span.kind == "json_value"

        def hold_from(at: int) -> int:
            return len(text) if final else self._hold_inside(text, at)

        held = hold_from(pos)
        if self._escaped:  # the character a backslash escaped opens this chunk
            if pos >= len(text):
                return None, pos
            pos, self._escaped = pos + 1, False
        while True:
            if self._quote:  # no marker ends a string: it is read to its end
                stop = _STRING_STOP.search(text, pos)
                if stop is None:
                    return None, len(text)
                if stop.group() == '"':
                    pos, self._quote = stop.end(), ""
                    if pos > held:  # the string ran past what looked like a marker's start
                        held = hold_from(pos)
                elif stop.end() == len(text):
                    self._escaped = True
                    return None, len(text)
                else:
                    pos = stop.end() + 1
                continue
            match = inside.search.search(text, pos)
            if match is None or match.start() >= held:
                return None, held
            token, pos = match.group(), match.end()
            if token in inside.ends:
                return pos, pos
            if len(token) > 1:  # a skip, read whole
                continue
            if token in "{[":
                self._braces += 1
            elif token in "}]" and self._braces:
                self._braces -= 1
                if value and not self._braces:
                    return pos, pos
            elif token == '"' and self._braces:
                self._quote = '"'

    def _after_trailer(self, text: str, pos: int, final: bool) -> int | None:
        """After a span with trailers: where scanning goes on (past the trailer, stripped,
        when it came), or None while blanks and a partial trailer may still become one."""
        assert self._trailing is not None
        trailer = _trailer(self._trailing)
        match = trailer.full.match(text, pos)
        if match is not None:
            self._strip_trailer(text[pos : match.end()])
        elif not final and trailer.viable.fullmatch(text, pos) is not None:
            return None
        self._trailing = None
        return pos if match is None else match.end()

    # --- bookkeeping ---------------------------------------------------------------------

    def _open(self, pattern: Pattern, marker: str) -> None:
        self._strip(marker)
        if pattern.kind == "token":
            self._span = pattern  # closed at once: only its trailers may follow
            self._close_span()
        else:
            self._span = pattern
            self._inside = _inside(pattern)
            self._braces, self._quote, self._escaped = 0, "", False
            if pattern.kind == "json_value" or pattern.json_strings == "always":
                self._json = "on"
            else:
                self._json = "pending" if pattern.json_strings == "leading" else "off"

    def _span_text(self, text: str, *, ended: bool = False) -> None:
        """Text inside the open span (`ended`: its end marker last): stripped, or, for a
        span whose body is reasoning, that body kept for take_reasoning() and only the end
        marker stripped."""
        span = self._span
        if span is None or not span.reasoning:
            self._strip(text)
            return
        marker = next((e for e in span.ends if text.endswith(e)), "") if ended else ""
        body = text[: len(text) - len(marker)]
        if body:
            self._reasoning.append(body)
        self._strip(marker)

    def _strip(self, text: str) -> None:
        self.stripped_chars += len(text)
        if self.stripped_spans == 0:  # only the first span's preview is ever kept
            room = PREVIEW_CHARS - len(self._preview)
            if room > 0:
                self._preview += text[:room]

    def _count_span(self) -> None:
        """One more span (or token) stripped; the first one's preview is kept."""
        if self.stripped_spans == 0:
            self.first_span = self._preview
            self._preview = ""
        self.stripped_spans += 1

    def _strip_trailer(self, text: str) -> None:
        """A trailer belongs to the span before it, in the count and in the preview."""
        self.stripped_chars += len(text)
        if self._trailing_first:
            self.first_span = (self.first_span + text)[:PREVIEW_CHARS]

    def _close_span(self) -> None:
        self._count_span()
        span, self._span = self._span, None
        self._json = "off"
        if span is not None and span.trailers:
            self._trailing, self._trailing_first = span, self.stripped_spans == 1
