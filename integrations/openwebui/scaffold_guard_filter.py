"""
title: Scaffold Guard
author: scaffold-guard
version: 0.1.0
license: MIT
description: Strips the raw tool-call markup small local models write into answers.
required_open_webui_version: 0.12.4

GENERATED FILE, do not edit by hand: in the scaffold-guard repository,
`uv run python -m integrations.openwebui.build` writes it. It is the guardrail library's own
code (guardrail/scaffolding.py whole, the parts of guardrail/policy.py the filter uses),
then the filter class (integrations/openwebui/filter_template.py), because Open WebUI runs
a function file with its own interpreter, where the library is not installed. A copy-paste
detector will report this file as a duplicate of guardrail/; it is one, made on purpose,
and the repository's tests fail when it is stale.

To install in Open WebUI, open Admin Panel > Functions, click +, paste this file, save it,
enable it and make it global (or attach it to models); see docs/integrations.md.
"""

# DeepSeek's markers are written with U+FF5C and U+2581 (as in guardrail/).
# ruff: noqa: RUF001

from __future__ import annotations

import functools
import re
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, field_validator

# ---- guardrail/scaffolding.py: the whole module after its imports ----


PatternKind = Literal["span", "token", "to_end"]
PREVIEW_CHARS = 200
_NEVER = r"(?!)"  # a regex that matches nothing


@dataclass(frozen=True)
class Pattern:
    """One kind of scaffolding.

    `span`: `start` ... one of `ends` (shortest match). `token`: `start` alone. `to_end`:
    `start` and everything after it to the end of the stream. `special` says the markers
    are single special tokens in the model's vocabulary; plain-text markers are left alone
    inside fenced code blocks.
    """

    name: str
    kind: PatternKind
    start: str
    source: str
    ends: tuple[str, ...] = ()
    special: bool = True

    def __post_init__(self) -> None:
        if not self.start:
            raise ValueError(f"pattern {self.name!r}: empty start marker")
        if (self.kind == "span") != bool(self.ends) or any(not end for end in self.ends):
            raise ValueError(f"pattern {self.name!r}: a span needs end markers, others none")
        for a in self.ends:
            for b in self.ends:
                if a != b and a in b:  # "x" inside "axb": which ends the span depends on chunking
                    raise ValueError(f"pattern {self.name!r}: end {a!r} is inside {b!r}: ambiguous")


Registry = tuple[Pattern, ...]

DEFAULT_REGISTRY: Registry = (
    Pattern(
        "lfm2-tool-call",
        "span",
        "<|tool_call_start|>",
        ends=("<|tool_call_end|>",),
        source="LiquidAI LFM2 chat template; vllm vllm/tool_parsers/lfm2_tool_parser.py",
    ),
    Pattern(
        "tool-calls-token",
        "token",
        "<|tool_calls|>",
        source="LFM2-family standalone token seen in leaked answers (contract clause G6)",
    ),
    Pattern(
        "tool-call-token",
        "token",
        "<|tool_call|>",
        source="IBM Granite 3.0 / Phi-4-mini marker seen bare (vllm granite_tool_parser.py)",
    ),
)

_VLLM = "vllm vllm/tool_parsers/"

PROFILES: dict[str, Registry] = {
    "hermes": (
        Pattern(
            "hermes-tool-call",
            "span",
            "<tool_call>",
            ends=("</tool_call>",),
            special=False,
            source=f"{_VLLM}hermes_tool_parser.py (Hermes, Qwen2.5/3, Granite 4, GLM-4.5+)",
        ),
    ),
    "qwen3-coder": (
        Pattern(
            "qwen3-coder-function",
            "span",
            "<function=",
            ends=("</function>",),
            special=False,
            source=f"{_VLLM}qwen3coder_tool_parser.py (bare <function=NAME> without wrapper)",
        ),
    ),
    "mistral": (
        Pattern(
            "mistral-tool-calls",
            "to_end",
            "[TOOL_CALLS]",
            source=f"{_VLLM}mistral_tool_parser.py (no end marker; mlx-lm PR #1448)",
        ),
    ),
    "deepseek": (
        Pattern(
            "deepseek-tool-calls",
            "span",
            "<｜tool▁calls▁begin｜>",
            ends=("<｜tool▁calls▁end｜>",),
            source=f"{_VLLM}deepseekv3_tool_parser.py; google/adk-python PR #5654",
        ),
        Pattern(
            "deepseek-tool-call",
            "span",
            "<｜tool▁call▁begin｜>",
            ends=("<｜tool▁call▁end｜>",),
            source=f"{_VLLM}deepseekv31_tool_parser.py",
        ),
        Pattern(
            "deepseek-dsml-function-calls",
            "span",
            "<｜DSML｜function_calls>",
            ends=("</｜DSML｜function_calls>",),
            source=f"{_VLLM}deepseekv32_tool_parser.py",
        ),
        Pattern(
            "deepseek-dsml-tool-calls",
            "span",
            "<｜DSML｜tool_calls>",
            ends=("</｜DSML｜tool_calls>",),
            source="DeepSeek V4 DSML, per sglang #40236",
        ),
    ),
    "harmony": (
        Pattern(
            "harmony-commentary",
            "span",
            "<|channel|>commentary",
            ends=("<|call|>", "<|end|>"),
            source=f"{_VLLM}openai_tool_parser.py; TensorRT-LLM #9256; odysseus PR #4523",
        ),
    ),
    "llama": (
        Pattern(
            "llama3-python-tag",
            "span",
            "<|python_tag|>",
            ends=("<|eom_id|>", "<|eot_id|>"),
            source=f"{_VLLM}llama_tool_parser.py; exo PR #1588 (often EOS-terminated)",
        ),
        Pattern(
            "llama4-python",
            "span",
            "<|python_start|>",
            ends=("<|python_end|>",),
            source=f"{_VLLM}llama4_pythonic_tool_parser.py",
        ),
    ),
    "kimi": (
        Pattern(
            "kimi-tool-calls-section",
            "span",
            "<|tool_calls_section_begin|>",
            ends=("<|tool_calls_section_end|>",),
            source=f"{_VLLM}kimi_k2_tool_parser.py; MoonshotAI/Kimi-K2 #26",
        ),
        Pattern(
            "kimi-tool-call",
            "span",
            "<|tool_call_begin|>",
            ends=("<|tool_call_end|>",),
            source=f"{_VLLM}kimi_k2_tool_parser.py; vllm PR #31207",
        ),
    ),
    "minimax": (
        Pattern(
            "minimax-m2-tool-call",
            "span",
            "<minimax:tool_call>",
            ends=("</minimax:tool_call>",),
            source=f"{_VLLM}minimax_m2_tool_parser.py; earendil-works/pi #368",
        ),
        Pattern(
            "minimax-m1-tool-calls",
            "span",
            "<tool_calls>",
            ends=("</tool_calls>",),
            special=False,
            source=f"{_VLLM}minimax_tool_parser.py, jamba_tool_parser.py",
        ),
    ),
    "internlm": (
        Pattern(
            "internlm-action",
            "span",
            "<|action_start|>",
            ends=("<|action_end|>",),
            source=f"{_VLLM}internlm2_tool_parser.py",
        ),
    ),
    "cohere": (
        Pattern(
            "cohere-action",
            "span",
            "<|START_ACTION|>",
            ends=("<|END_ACTION|>",),
            source=f"{_VLLM}command_tool_parser.py",
        ),
    ),
    "gemma": (
        Pattern(
            "gemma4-tool-call",
            "span",
            "<|tool_call>",
            ends=("<tool_call|>",),
            source=f"{_VLLM}gemma4_tool_parser.py",
        ),
        Pattern(
            "functiongemma-call",
            "span",
            "<start_function_call>",
            ends=("<end_function_call>",),
            source="vllm .../functiongemma_tool_parser.py",
        ),
    ),
}


def registry_with(*profiles: str, base: Registry = DEFAULT_REGISTRY) -> Registry:
    """`base` plus the named profiles. A later pattern with the same opener replaces one."""
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        raise ValueError(f"unknown profile(s) {', '.join(unknown)}; known: {', '.join(PROFILES)}")
    by_start = {pattern.start: pattern for pattern in base}
    for name in profiles:
        by_start.update((pattern.start, pattern) for pattern in PROFILES[name])
    return tuple(by_start.values())


class _Matcher:
    """What a registry compiles to: one opener regex, the prefix sets for hold-back."""

    def __init__(self, registry: Registry) -> None:
        starts = [p.start for p in registry]
        if len(set(starts)) != len(starts):
            raise ValueError("two patterns share an opener")
        for a in starts:
            for b in starts:
                if a != b and a in b:  # a whole opener would be held inside another's prefix
                    how = "a prefix of" if b.startswith(a) else "inside"
                    raise ValueError(f"opener {a!r} is {how} {b!r}: ambiguous")
        self.by_start = {p.start: p for p in registry}
        self.longest = max(len(s) for s in starts)
        self.opener = re.compile("|".join(re.escape(s) for s in sorted(starts, key=len)[::-1]))
        firsts = sorted({s[0] for s in starts})
        self.first_char = firsts[0] if len(firsts) == 1 else None
        self.first = re.compile("[" + "".join(re.escape(c) for c in firsts) + "]")
        self.special_prefixes = _proper_prefixes(p.start for p in registry if p.special)
        self.plain_prefixes = _proper_prefixes(p.start for p in registry if not p.special)


def _proper_prefixes(markers: Iterable[str]) -> frozenset[str]:
    return frozenset(m[:i] for m in markers for i in range(1, len(m)))


@functools.lru_cache(maxsize=64)
def _matcher(registry: Registry) -> _Matcher:
    return _Matcher(registry)


SpanEnds = tuple[re.Pattern[str], int, frozenset[str], re.Pattern[str]]


@functools.lru_cache(maxsize=256)
def _ends(pattern: Pattern) -> SpanEnds:
    """A span's end-marker regex, longest end, end prefixes, and end first-character regex."""
    ends = sorted(pattern.ends, key=len)[::-1]
    regex = re.compile("|".join(re.escape(e) for e in ends) or _NEVER)
    longest = max((len(e) for e in ends), default=0)
    firsts = "".join(re.escape(c) for c in sorted({e[0] for e in ends}))
    return regex, longest, _proper_prefixes(ends), re.compile(f"[{firsts}]" if firsts else _NEVER)


_NO_ENDS: SpanEnds = (re.compile(_NEVER), 0, frozenset(), re.compile(_NEVER))


class _Fences:
    """Whether the text so far is inside a fenced code block (``` or ~~~ lines)."""

    __slots__ = ("char", "decided", "head", "open")

    def __init__(self) -> None:
        self.open = False
        self.char = ""
        self.head = ""
        self.decided = False

    def copy(self) -> _Fences:
        twin = _Fences()
        twin.open, twin.char, twin.head, twin.decided = (
            self.open,
            self.char,
            self.head,
            self.decided,
        )
        return twin

    def feed(self, text: str) -> None:
        lines = text.split("\n")
        for index, piece in enumerate(lines):
            if index:
                self.head, self.decided = "", False
            if not self.decided:
                self.head = (self.head + piece)[:8]
                self._decide(complete=index < len(lines) - 1)

    def _decide(self, complete: bool) -> None:
        body = self.head.lstrip(" ")
        if len(self.head) - len(body) > 3:
            self.decided = True
            return
        run = len(body) - len(body.lstrip(body[:1])) if body[:1] in ("`", "~") else 0
        if run >= 3:
            self.decided = True
            if not self.open:
                self.open, self.char = True, body[0]
            elif body[0] == self.char:
                self.open = False
        elif complete or len(body) > run:
            self.decided = True


class ScaffoldingFilter:
    """Incremental scaffolding stripper for one stream. Not reusable after flush()."""

    __slots__ = (
        "_clean",
        "_fast",
        "_fences",
        "_flushed",
        "_held",
        "_matcher",
        "_preview",
        "_span",
        "_span_ends",
        "first_span",
        "stripped_chars",
        "stripped_spans",
    )

    def __init__(self, registry: Registry = DEFAULT_REGISTRY) -> None:
        self._matcher = _matcher(registry)
        self._held = ""
        self._span: Pattern | None = None
        self._span_ends = _NO_ENDS
        self._preview = ""
        plain = any(not p.special for p in registry)  # even a 1-char one, with no prefix to hold
        self._fences = _Fences() if plain else None
        self._clean = True
        self._fast: str | None = None
        self._set_clean(True)
        self._flushed = False
        self.stripped_chars = 0  # characters taken out so far
        self.stripped_spans = 0  # spans and tokens taken out so far
        self.first_span = ""  # the first of them, cut to PREVIEW_CHARS characters

    @property
    def held(self) -> str:
        """The text held back right now (a possible marker prefix)."""
        return self._held

    def feed(self, chunk: str) -> str:
        """The part of the stream that is safe to show now, `chunk` included."""
        fast = self._fast
        if fast is not None and fast not in chunk:
            return chunk
        return self._feed(chunk)

    def _feed(self, chunk: str) -> str:
        """Cheaper paths first, then a full scan of the held text and the chunk."""
        if self._flushed:  # flush() turned the fast path off, so every feed gets here
            raise RuntimeError("ScaffoldingFilter.feed() after flush(): use a fresh filter")
        held = self._held
        if self._span is not None:
            if not held:
                if self._span_ends[3].search(chunk) is None:
                    self._strip(chunk)  # no end marker can start in it: all of it is span
                    return ""
            elif held + chunk in self._span_ends[2]:
                self._held = held + chunk  # still an end marker's prefix: hold it all
                return ""
        elif not held:
            if self._matcher.first.search(chunk) is None:
                self._feed_fences(chunk)
                return chunk
        elif held + chunk in self._matcher.special_prefixes:
            self._held = held + chunk  # still a special opener's prefix: hold it all
            return ""
        return self._scan(held + chunk)

    def _set_clean(self, clean: bool) -> None:
        """Outside any span with nothing held, a chunk with no opener's first character is
        returned as it is; with one first character and no fences, by a bare `in` test."""
        self._clean = clean
        single = self._matcher.first_char if self._fences is None else None
        self._fast = single if clean else None

    def flush(self) -> str:
        """At stream end: a held partial opener is text; an open span is stripped to the end.

        A second flush returns ''; a feed after flush is an error.
        """
        self._flushed = True
        held, self._held = self._held, ""
        self._set_clean(True)
        self._fast = None
        if self._span is not None:
            self._strip(held)
            self._close_span()
            return ""
        if self._fences is not None:
            self._fences.feed(held)
        return held

    # --- scanning ------------------------------------------------------------------------

    def _scan(self, text: str) -> str:
        out: list[str] = []
        pos = 0
        while True:
            if self._span is None:
                match = self._matcher.opener.search(text, pos)
                if match is None:
                    break
                pattern = self._matcher.by_start[match.group()]
                before = text[pos : match.start()]
                out.append(before)
                self._feed_fences(before)
                pos = match.end()
                if self._fences is not None and self._fences.open and not pattern.special:
                    # A plain marker in a code block is an example: text, scanned on from its
                    # second character, so a special token overlapping its tail is still found.
                    pos = match.start() + 1
                    out.append(text[match.start()])
                    self._fences.feed(text[match.start()])
                    continue
                self._open(pattern, match.group())
            else:
                match = self._span_ends[0].search(text, pos)
                if match is None:
                    break
                self._strip(text[pos : match.end()])
                pos = match.end()
                self._close_span()
        if self._span is None:
            keep = self._hold_outside(text, pos)
            out.append(text[pos:keep])
            self._feed_fences(text[pos:keep])
        else:
            keep = self._hold_inside(text, pos)
            self._strip(text[pos:keep])
        self._held = text[keep:]
        self._set_clean(self._span is None and not self._held)
        return "".join(out)

    def _feed_fences(self, text: str) -> None:
        if self._fences is not None:
            self._fences.feed(text)

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
        return len(text)

    def _fenced_at(self, text: str, pos: int, index: int) -> bool:
        if self._fences is None:
            return False
        probe = self._fences.copy()
        probe.feed(text[pos:index])
        return probe.open

    def _hold_inside(self, text: str, pos: int) -> int:
        """Where the held-back suffix starts inside a span: a prefix of one of its ends."""
        _, longest, prefixes, firsts = self._span_ends
        for candidate in firsts.finditer(text, max(pos, len(text) - longest + 1)):
            if text[candidate.start() :] in prefixes:
                return candidate.start()
        return len(text)

    # --- bookkeeping ---------------------------------------------------------------------

    def _open(self, pattern: Pattern, marker: str) -> None:
        self._strip(marker)
        if pattern.kind == "token":
            self._close_span()
        else:
            self._span = pattern
            self._span_ends = _ends(pattern)

    def _strip(self, text: str) -> None:
        self.stripped_chars += len(text)
        if self.stripped_spans == 0:  # only the first span's preview is ever kept
            room = PREVIEW_CHARS - len(self._preview)
            if room > 0:
                self._preview += text[:room]

    def _close_span(self) -> None:
        if self.stripped_spans == 0:
            self.first_span = self._preview
            self._preview = ""
        self.stripped_spans += 1
        self._span = None


# ---- guardrail/policy.py: MALFORMED_REPLY, RoundFilter, needs_recovery and what they use ----


MALFORMED_REPLY = "The model returned a malformed reply — please try again."
"""What the user is told when the recovery was empty too (contract G3, verbatim)."""


class RoundFilter:
    """The answer text of one model request, through a fresh scaffolding filter."""

    __slots__ = ("_filter", "visible")

    def __init__(self, registry: Registry) -> None:
        self._filter = ScaffoldingFilter(registry)
        self.visible = False  # has any non-whitespace text been shown?

    def feed(self, text: str) -> str:
        return self._seen(self._filter.feed(text))

    def flush(self) -> str:
        return self._seen(self._filter.flush())

    def _seen(self, shown: str) -> str:
        if not self.visible and shown and not shown.isspace():
            self.visible = True
        return shown

    @property
    def stripped_chars(self) -> int:
        return self._filter.stripped_chars

    @property
    def first_span(self) -> str:
        """The first stripped span, cut to its first PREVIEW_CHARS characters ('' if none)."""
        return self._filter.first_span


def needs_recovery(*, stripped_chars: int, visible: bool, tool_calls: int) -> bool:
    """Whether a finished round gets the one recovery request (G2; never with tool calls, G12)."""
    return stripped_chars > 0 and not visible and tool_calls == 0


# ---- integrations/openwebui/filter_template.py: the whole module after its imports ----


MAX_OPEN_REPLIES = 1024
"""How many replies may stream through the filter at once before the oldest is forgotten."""

ReplyKey = tuple[str, str, int]
"""(what names the reply: "message" or "completion", that name, the choice index)."""

Json = dict[str, Any]


def profile_names(text: str) -> tuple[str, ...]:
    """The profile names of a valve's text: comma- or space-separated, in order, once each."""
    names = (name.strip().lower() for name in text.replace(",", " ").split())
    return tuple(dict.fromkeys(name for name in names if name))


def registry_for(text: str) -> Registry:
    """LFM2's markup plus the known profiles `text` names (unknown ones are skipped: the
    valve refuses them when saved, so only a hand-edited database could hold one)."""
    return registry_with(*(name for name in profile_names(text) if name in PROFILES))


class _Reply:
    """One streamed choice of one reply: its filter, and whether it carried tool calls."""

    __slots__ = ("filter", "tool_calls")

    def __init__(self, registry: Registry) -> None:
        self.filter = RoundFilter(registry)
        self.tool_calls = 0

    def end(self, *, tool_call_finish: bool) -> tuple[str, bool]:
        """The held tail, and whether the whole reply was markup with no tool call (so its
        user must read the malformed-reply copy)."""
        tail = self.filter.flush()
        tool_calls = self.tool_calls + int(tool_call_finish)
        stripped, visible = self.filter.stripped_chars, self.filter.visible
        return tail, needs_recovery(stripped_chars=stripped, visible=visible, tool_calls=tool_calls)


class _OpenReplies:
    """The replies streaming now, least recently fed first, at most `bound` of them."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._replies: OrderedDict[ReplyKey, _Reply] = OrderedDict()

    def __len__(self) -> int:
        return len(self._replies)

    def get(self, key: ReplyKey) -> _Reply | None:
        reply = self._replies.get(key)
        if reply is not None:
            self._replies.move_to_end(key)
        return reply

    def start(self, key: ReplyKey, registry: Registry) -> _Reply:
        reply = self._replies[key] = _Reply(registry)
        while len(self._replies) > self._bound:
            self._replies.popitem(last=False)
        return reply

    def pop(self, key: ReplyKey) -> None:
        self._replies.pop(key, None)

    def pop_message(self, message_id: str) -> list[_Reply]:
        """The open replies of an Open WebUI message, lowest choice first, now closed."""
        keys = sorted(k for k in self._replies if k[:2] == ("message", message_id))
        return [self._replies.pop(k) for k in keys]


class Filter:
    """Keeps raw tool-call markup out of what Open WebUI shows and saves (module docstring)."""

    class Valves(BaseModel):
        enabled: bool = Field(
            default=True, description="Strip raw tool-call markup from answers (off: pass all)."
        )
        profiles: str = Field(
            default="",
            description=(
                "Opt-in markup profiles stripped besides LFM2's, comma-separated: "
                + ", ".join(PROFILES)
            ),
        )
        priority: int = Field(
            default=0, description="Filter order: Open WebUI runs lower priorities first."
        )

        @field_validator("profiles")
        @classmethod
        def known_profiles(cls, value: str) -> str:
            registry_with(*profile_names(value))  # raises ValueError naming the known ones
            return value

    def __init__(self) -> None:
        self.valves = self.Valves()
        self._open = _OpenReplies(MAX_OPEN_REPLIES)

    def stream(self, event: object, __metadata__: object = None) -> object:
        """One event of a streamed reply, its choices' content filtered in place."""
        if not self.valves.enabled or not isinstance(event, dict):
            return event
        chunk = cast(Json, event)
        choices = chunk.get("choices")
        if isinstance(choices, list):
            name = _reply_name(chunk, __metadata__)
            for position, choice in enumerate(cast(list[object], choices)):
                if isinstance(choice, dict):
                    self._filter_choice(name, position, cast(Json, choice))
        return chunk

    def outlet(self, body: object, __metadata__: object = None) -> object:
        """The finished chat: every assistant message's content and output text repaired."""
        if not self.valves.enabled or not isinstance(body, dict):
            return body
        chat = cast(Json, body)
        messages = chat.get("messages")
        if not isinstance(messages, list):
            return chat
        message_id = _string(_get(__metadata__, "message_id")) or _string(chat.get("id"))
        unfinished = self._open.pop_message(message_id) if message_id else []
        registry = registry_for(self.valves.profiles)
        for message in cast(list[object], messages):
            if not isinstance(message, dict):
                continue
            message = cast(Json, message)
            if message.get("role") != "assistant":
                continue
            tail = ""
            if unfinished and message.get("id") == message_id:
                tail, malformed = unfinished[0].end(tool_call_finish=False)
                tail = MALFORMED_REPLY if malformed else tail  # as its finish chunk would
            _repair_message(message, registry, tail)
        return chat

    def _filter_choice(self, name: tuple[str, str], position: int, choice: Json) -> None:
        index = choice.get("index")
        index = index if type(index) is int else position
        key: ReplyKey = (*name, index)
        delta = choice.get("delta")
        delta = cast(Json, delta) if isinstance(delta, dict) else None
        text = _text(delta.get("content")) if delta is not None else None
        calls = delta is not None and bool(delta.get("tool_calls"))
        finish = choice.get("finish_reason")
        reply = self._open.get(key)
        if reply is None:
            if text is None and not calls:
                return  # nothing of this reply has been text: nothing held, nothing to say
            reply = self._open.start(key, registry_for(self.valves.profiles))
        reply.tool_calls += calls
        shown = reply.filter.feed(text) if text else ""
        if finish is not None:
            self._open.pop(key)
            tail, malformed = reply.end(tool_call_finish=finish == "tool_calls")
            shown = MALFORMED_REPLY if malformed else shown + tail
        if text is None and not shown:
            return
        if delta is None:
            delta = choice["delta"] = {}
        delta["content"] = shown


def _reply_name(chunk: Json, metadata: object) -> tuple[str, str]:
    message_id = _string(_get(metadata, "message_id"))
    if message_id:
        return ("message", message_id)
    return ("completion", _string(chunk.get("id")))


def _get(mapping: object, key: str) -> object:
    return cast(Json, mapping).get(key) if isinstance(mapping, dict) else None


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _text(content: object) -> str | None:
    """A delta's content as the text Open WebUI shows (None: no text in this delta)."""
    if isinstance(content, str):
        return content
    return f"{content}" if content else None


class _Texts:
    """Some whole texts of one message, each through a fresh filter, and what that took."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.stripped = 0
        self.visible = False

    def repair(self, text: str) -> str:
        whole = RoundFilter(self.registry)
        shown = whole.feed(text) + whole.flush()
        self.stripped += whole.stripped_chars
        self.visible = self.visible or whole.visible
        return shown

    def all_markup(self, tool_calls: int) -> bool:
        return needs_recovery(
            stripped_chars=self.stripped, visible=self.visible, tool_calls=tool_calls
        )


def _repair_message(message: Json, registry: Registry, tail: str) -> None:
    """Repair one assistant message in place, after appending `tail` (what its unfinished
    stream still had to show) to its content and its output."""
    parts = _text_parts(message.get("output"))
    if tail:
        _append(message, parts, tail)
    text = _Texts(registry)
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = text.repair(content)
    output = _Texts(registry)
    for part in parts:
        part["text"] = output.repair(part["text"])
    tool_calls = _tool_calls(message)
    if text.all_markup(tool_calls) or output.all_markup(tool_calls):
        _show_malformed(message, parts)


def _append(message: Json, parts: list[Json], tail: str) -> None:
    content = message.get("content")
    if isinstance(content, str) or content is None:
        message["content"] = (content or "") + tail
    output = message.get("output")
    if parts:
        parts[-1]["text"] += tail
    elif isinstance(output, list):
        parts.append(_new_text_item(cast(list[object], output), tail))


def _text_parts(output: object) -> list[Json]:
    """The text parts of a message's `message` output items, in order (reasoning, tool
    calls and their results are other item types, left alone)."""
    if not isinstance(output, list):
        return []
    parts: list[Json] = []
    for item in cast(list[object], output):
        if not isinstance(item, dict) or cast(Json, item).get("type") != "message":
            continue
        content = cast(Json, item).get("content")
        if isinstance(content, list):
            for part in cast(list[object], content):
                if isinstance(part, dict) and isinstance(cast(Json, part).get("text"), str):
                    parts.append(cast(Json, part))
    return parts


def _tool_calls(message: Json) -> int:
    calls = message.get("tool_calls")
    count = len(cast(list[object], calls)) if isinstance(calls, list) else 0
    output = message.get("output")
    if isinstance(output, list):
        items = cast(list[object], output)
        count += sum(_get(item, "type") == "function_call" for item in items)
    return count


def _show_malformed(message: Json, parts: list[Json]) -> None:
    """The message reads the malformed-reply copy, in its content and its output."""
    message["content"] = MALFORMED_REPLY
    for number, part in enumerate(parts):
        part["text"] = MALFORMED_REPLY if number == 0 else ""
    output = message.get("output")
    if not parts and isinstance(output, list):
        _new_text_item(cast(list[object], output), MALFORMED_REPLY)


def _new_text_item(output: list[object], text: str) -> Json:
    """A `message` output item holding `text` appended to `output`; its text part."""
    part: Json = {"type": "output_text", "text": text}
    item = {"type": "message", "id": f"msg_{uuid.uuid4().hex}", "status": "completed"}
    output.append({**item, "role": "assistant", "content": [part]})
    return part
