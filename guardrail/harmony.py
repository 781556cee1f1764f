"""Harmony (gpt-oss) messages in a content stream, routed: answer, reasoning, or stripped.

gpt-oss writes its whole completion as harmony messages: a header (`<|start|>assistant`, then
`<|channel|>` and a channel, perhaps a recipient ` to=...` before or after the channel, and
a content type such as ` json` or `<|constrain|>json`) up to `<|message|>`, then a body up
to `<|end|>`, `<|call|>` or `<|return|>`. A server that does not parse harmony passes it all
into the answer text. `HarmonyReader` reads it back out, incrementally (openai/harmony
docs/format.md; docs/research/harmony.md has every source):

- a message to a recipient other than `assistant` is a tool call, stripped whole, body and
  all (built-in recipients such as `browser.search` or `python` too);
- `analysis` is the chain of thought: reasoning, never the answer;
- `final` is the answer; `commentary` with no recipient is a preamble meant for the user,
  shown as answer as vLLM, llama.cpp and SGLang show it, unless its body is a bare JSON
  object or array: a call whose recipient was dropped (TensorRT-LLM #9256);
- a message from another role (a tool's reply the model made up) or on a channel that is
  none of these (`<|channel|>??`, llama.cpp #27720) is stripped;
- headers and stray special tokens are stripped wherever they stand; text outside any
  message (before the first header, after an `<|end|>`) is answer, as llama.cpp leaves it
  with `reasoning_format=none`.

Deliberate choices a reader might want to "fix":
- A header is held until its `<|message|>`, at most HEADER_LIMIT characters: where its
  body goes depends on all of it. One with no `<|message|>` (non-strict harmony:
  `<|channel|>analysis I must refuse<|end|>`) has its words after the channel as its body.
- A reply may begin with the recipient, ` to=functions.x<|channel|>...`, when the server's
  prompt ended with `<|start|>assistant`; that counts only at the reply's very start and
  only with `<|channel|>` right after it (LEAD), so prose that starts with `to=` stays.
- A call's JSON body is read string by string: a token quoted in an argument is data.
- Reasoning is never filtered (G9): it goes out as the model wrote it.
- The next header also ends a body: SGLang and harmony's own parser accept messages with
  no end token between them.
"""

from __future__ import annotations

import re
from typing import Literal

from guardrail.shapes import Chars, Lit, compiled, seq

Route = Literal["answer", "reasoning", "stripped", "closed"]
"""Where a piece of the stream goes; `closed` (with no text) ends one stripped message."""
Routed = list[tuple[Route, str]]
Body = Literal["answer", "reasoning", "call", "preamble"]
"""What a body is: `preamble` until its first non-blank says answer or call."""
BodyJson = Literal["off", "pending", "on"]
"""Whether a call's body is read as JSON: `pending` until its first non-blank says."""

ENDS = ("<|end|>", "<|call|>", "<|return|>")
OPENERS = ("<|start|>", "<|channel|>")
TOKENS = (*OPENERS, "<|message|>", "<|constrain|>", *ENDS)
HEADER_LIMIT = 256
"""The longest header held while its `<|message|>` has not come (real ones are under 80)."""
LEAD = compiled(
    seq(
        Chars(r"[ \t\r\n]", 0, 4),
        Lit("to="),
        Chars(r"[^\s<]", 1, 128),
        Chars(r"[ \t]", 0, 2),
        Lit("<|channel|>"),
    )
)
"""A reply that begins with its recipient, then its channel."""

_TOKEN = re.compile("|".join(re.escape(t) for t in TOKENS))
_IN_JSON = re.compile('"|' + _TOKEN.pattern)
_QUOTE_OR_ESCAPE = re.compile(r'["\\]')
_TOKEN_PREFIXES = frozenset(t[:i] for t in TOKENS for i in range(1, len(t)))
_LONGEST_TOKEN = max(len(t) for t in TOKENS)
_ROLE = re.compile(r"<\|start\|>([^\s<]*)")
_CHANNEL = re.compile(r"<\|channel\|>([^\s<]*)")
_RECIPIENT = re.compile(r"(?:^|[\s>])to=([^\s<]+)")
JSON_ITEM_STARTS = '{["]-0123456789'
"""What follows a JSON array's `[` in a call's arguments: an item (object, array, string,
number) or its end."""
_FIRST_CHAR = re.compile(r"\S")


def route_of(header: str) -> Body:
    """Where a message's body goes, from its whole header (the tokens included)."""
    role = _ROLE.search(header)
    if role is not None and role.group(1) not in ("", "assistant"):
        return "call"
    recipients = _RECIPIENT.findall(header)
    if recipients and recipients[-1] != "assistant":
        return "call"
    channels = _CHANNEL.findall(header)
    channel = channels[-1] if channels else ""
    if channel == "analysis":
        return "reasoning"
    if channel in ("final", ""):
        return "answer"
    return "preamble" if channel == "commentary" else "call"


def _inline_body(header: str) -> str:
    """The body of a header that never got its `<|message|>`: what follows the channel."""
    channels = list(_CHANNEL.finditer(header))
    if not channels:
        return ""
    rest = header[channels[-1].end() :]
    return rest[1:] if rest[:1] in (" ", "\t") else rest


class HarmonyReader:
    """One stream's harmony messages, routed (see the module docstring)."""

    __slots__ = (
        "_body",
        "_escaped",
        "_header",
        "_held",
        "_json",
        "_lead",
        "_string",
        "_unit",
        "idle",
    )

    def __init__(self) -> None:
        self._held = ""
        self._lead = True  # at the reply's start: ` to=x<|channel|>` may open a header
        self._header: str | None = None  # the header read so far, while one is open
        self._body: Body = "answer"
        self._json: BodyJson = "off"  # a call's body is JSON: its strings are data
        self._string = False
        self._escaped = False
        self._unit = False  # a stripped message is open
        self.idle = False  # outside any message with nothing held: no `<`, nothing to do

    @property
    def held(self) -> str:
        return (self._header or "") + self._held

    def feed(self, chunk: str) -> Routed:
        """Where each piece of the stream so far goes (the rest is held)."""
        if self.idle and ("|" not in chunk or "<|" not in chunk) and chunk[-1:] != "<":
            return [("answer", chunk)] if chunk else []
        out: Routed = []
        text, self._held = self._held + chunk, ""
        self._read(text, out, final=False)
        self._set_idle()
        return out

    def _set_idle(self) -> None:
        self.idle = (
            not self._held and self._header is None and not self._lead and self._body == "answer"
        )

    def flush(self) -> Routed:
        """At the end: what was held goes where it stands; an open message ends."""
        out: Routed = []
        text, self._held = self._held, ""
        self._read(text, out, final=True)
        if self._header is not None:
            header, self._header = self._header, None
            self._resolve(header, out)
        self._close(out)
        self._set_idle()
        return out

    # --- reading -------------------------------------------------------------------------

    def _read(self, text: str, out: Routed, final: bool) -> None:
        pos = 0
        while pos < len(text):
            if self._lead:
                pos = self._read_lead(text, pos, final)
                if pos < 0:
                    return
            elif self._header is not None:
                pos = self._read_header(text, pos, out, final)
            elif self._body == "preamble" or self._json == "pending":
                found = _FIRST_CHAR.search(text, pos)
                if found is None and not final:
                    self._held = text[pos:]
                    return
                first = text[found.start()] if found is not None else ""
                after = ""
                if first == "[" and self._body == "preamble" and found is not None:
                    second = _FIRST_CHAR.search(text, found.end())
                    if second is None and not final:
                        self._held = text[pos:]
                        return
                    after = text[second.start()] if second is not None else ""
                self._decide(first, after)
            elif self._string:
                pos = self._read_string(text, pos, out)
            else:
                pos = self._read_body(text, pos, out, final)

    def _read_lead(self, text: str, pos: int, final: bool) -> int:
        """At the reply's start: a header that begins with its recipient, or answer text
        (-1: all of it is held, still undecided)."""
        found = LEAD.full.match(text, pos)
        if found is not None:
            self._lead = False
            self._header = text[pos : found.end()]
            return found.end()
        if not final and LEAD.viable.fullmatch(text, pos) is not None:
            self._held = text[pos:]
            return -1
        self._lead = False
        return pos

    def _read_header(self, text: str, pos: int, out: Routed, final: bool) -> int:
        """More of an open header: up to its `<|message|>` (or an end token, or its limit,
        counted in characters of the stream so that every chunking cuts it alike)."""
        header = self._header
        assert header is not None
        limit = pos + max(HEADER_LIMIT - len(header), 0)
        found = _next_token(text, pos)
        if found is None or found.start() > limit:
            keep = len(text) if final else _held_from(text, pos)
            if found is None and keep <= limit:
                self._header = header + text[pos:keep]
                self._held = text[keep:]
                return len(text)
            self._header = None  # past its limit: what it has so far decides
            self._resolve(header + text[pos:limit], out)
            return limit
        token = found.group()
        header += text[pos : found.start()]
        if token == "<|start|>":  # a header that never got its body: dropped
            self._header = None
            self._strip(header, out)
            self._close(out)
            self._header = token
        elif token == "<|message|>":
            self._header = None
            self._open(header + token, out)
        elif token in ENDS:
            self._header = None
            self._resolve(header, out)
            self._strip(token, out)
            self._end(out)
        else:  # `<|channel|>` or `<|constrain|>`: more of the same header
            self._header = header + token
        return found.end()

    def _read_body(self, text: str, pos: int, out: Routed, final: bool) -> int:
        found = _IN_JSON.search(text, pos) if self._json == "on" else _next_token(text, pos)
        if found is None:
            keep = len(text) if final else _held_from(text, pos)
            self._emit(text[pos:keep], out)
            self._held = text[keep:]
            return len(text)
        token = found.group()
        if token == '"':
            self._emit(text[pos : found.end()], out)
            self._string = True
            return found.end()
        self._emit(text[pos : found.start()], out)
        if token in OPENERS:
            self._close(out)
            self._header = token
        elif token in ENDS:
            self._strip(token, out)
            self._end(out)
        else:  # a stray `<|message|>` or `<|constrain|>`
            self._strip(token, out)
        return found.end()

    def _read_string(self, text: str, pos: int, out: Routed) -> int:
        """Inside a JSON string of a call: to its closing quote, escapes included."""
        if self._escaped:
            self._escaped = False
            self._strip(text[pos], out)
            return pos + 1
        stop = _QUOTE_OR_ESCAPE.search(text, pos)
        if stop is None:
            self._strip(text[pos:], out)
            return len(text)
        if stop.group() == '"':
            self._string = False
            self._strip(text[pos : stop.end()], out)
            return stop.end()
        self._strip(text[pos : stop.end()], out)
        self._escaped = True
        return stop.end()

    # --- routing -------------------------------------------------------------------------

    def _open(self, header: str, out: Routed) -> None:
        """A whole header: stripped, and its body's route set."""
        self._strip(header, out)
        self._body = route_of(header)
        self._string = self._escaped = False
        self._json = "pending" if self._body == "call" else "off"

    def _decide(self, first: str, after: str = "") -> None:
        """A preamble's or a call's first non-blank character ('' at the end) came (and for
        a preamble's `[`, the next one, `after`): a preamble that opens a JSON object or
        array is a call (`[{`, `["`, `[1`, `[]`; `[Update] I am checking` is a preamble), a
        call's body that does is read as JSON."""
        json = first in ("{", "[")
        if self._body == "preamble":
            array = first == "[" and after != "" and after in JSON_ITEM_STARTS
            self._body = "call" if first == "{" or array else "answer"
            json = self._body == "call"
        self._json = "on" if json and self._body == "call" else "off"

    def _resolve(self, header: str, out: Routed) -> None:
        """A header that never got its `<|message|>`: its words after the channel are its
        body (stripped with it when it is a call); the rest of the message follows it."""
        route = route_of(header)
        body = _inline_body(header) if route != "call" else ""
        self._strip(header[: len(header) - len(body)], out)
        self._body, self._json, self._string = route, "off", False
        if route == "preamble":
            self._decide(body.lstrip()[:1])
        self._emit(body, out)

    def _emit(self, text: str, out: Routed) -> None:
        if not text:
            return
        body = self._body
        if body == "call":
            self._strip(text, out)
        else:
            _route_to(out, "reasoning" if body == "reasoning" else "answer", text)

    def _strip(self, text: str, out: Routed) -> None:
        if text:
            self._unit = True
            _route_to(out, "stripped", text)

    def _close(self, out: Routed) -> None:
        if self._unit:
            self._unit = False
            out.append(("closed", ""))

    def _end(self, out: Routed) -> None:
        """A message's end token: what follows is outside any message (answer)."""
        self._close(out)
        self._body, self._json = "answer", "off"
        self._string = self._escaped = False


def _route_to(out: Routed, route: Route, text: str) -> None:
    if out and out[-1][0] == route:
        out[-1] = (route, out[-1][1] + text)
    else:
        out.append((route, text))


def _next_token(text: str, pos: int) -> re.Match[str] | None:
    """The first token at or after `pos`: every token begins `<|`, which str.find finds far
    faster than the token regex can."""
    at = text.find("<|", pos)
    while at >= 0:
        found = _TOKEN.match(text, at)
        if found is not None:
            return found
        at = text.find("<|", at + 1)
    return None


def _held_from(text: str, pos: int) -> int:
    """Where a suffix that may still become a token starts (len(text) when none)."""
    for index in range(max(pos, len(text) - _LONGEST_TOKEN + 1), len(text)):
        if text[index] == "<" and text[index:] in _TOKEN_PREFIXES:
            return index
    return len(text)
