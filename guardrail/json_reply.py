"""A reply that is nothing but JSON tool calls: Llama 3.x's calls, which have no marker.

Llama 3.1 to 3.3 write a call as the whole reply, `{"name": "f", "parameters": {...}}`,
several joined by `; ` (Meta's llama-models prompt format; vLLM's llama3_json parser).
No marker says it is a call, so the filter decides from the whole reply: `ReplyCalls` reads
it from its first character while it can still be nothing but such calls, and says so.

Deliberate choices a reader might want to "fix":
- Only the whole reply counts: a call-shaped object after prose, before prose, in a code
  fence, or next to any other JSON is an answer and is shown (a JSON answer a user asked
  for is never eaten unless it is exactly a call: an object whose keys are `name`, a
  function name, and `parameters` or `arguments`, an object, with at most a `type`).
- The reply is held while undecided, at most HOLD_LIMIT characters: a longer reply is
  shown, whatever it is (a call that long is not what this family writes by mistake).
- Its characters are read one by one in Python, but only until the reply is decided, and
  a reply that does not begin with `{` is decided at its first character (a JSON list of
  call objects is an answer: Meta's formats never write one, and a user asks for lists).
- The calls may be followed by the tokens that end a turn (`REPLY_TRAILERS`: Llama's
  `<|eot_id|>`, `<|eom_id|>` and Llama 4's `<|eot|>`, `<|eom|>`, as Meta's prompt formats
  show a call reply ending, a server that keeps special tokens passes them on) and by a
  stray `</tool_call>` (ollama #13968): the reply is still nothing but calls, and they go
  with it.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from guardrail.json_shapes import is_object
from guardrail.patterns import BLANKS

HOLD_LIMIT = 16_384
"""The longest reply held back while it may still be nothing but calls."""
CALL_KEYS = frozenset({"name", "parameters", "arguments", "type"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}\Z")

Reading = Literal["maybe", "no"]
REPLY_TRAILERS = (
    "<|eot_id|>",
    "<|eom_id|>",
    "<|eot|>",
    "<|eom|>",
    "<|end_of_text|>",
    "<|im_end|>",
    "<end_of_turn>",
    "</tool_call>",
)
"""What may follow a whole reply of calls and still leave it nothing but calls: the tokens
that end a turn, and a stray closer."""


def is_call(obj: object) -> bool:
    """Whether a parsed JSON value is one call as Llama writes it."""
    if not is_object(obj) or not set(obj) <= CALL_KEYS or "name" not in obj:
        return False
    args = [obj[key] for key in ("parameters", "arguments") if key in obj]
    name = obj["name"]
    return (
        len(args) == 1
        and is_object(args[0])
        and isinstance(name, str)
        and _NAME.match(name) is not None
        and obj.get("type", "function") == "function"
    )


class CharReader:
    """The part every reader of a whole reply shares: the reply kept as it comes, at most
    HOLD_LIMIT characters, read one character at a time by `_read` until it says the reply
    can no longer be calls; `feed` says whether it may still be ("maybe") or not ("no",
    final: the text is an answer)."""

    __slots__ = ("_calls", "_trailed", "_trailer", "_verdict", "text")

    def __init__(self) -> None:
        self.text = ""
        self._verdict: Reading = "maybe"
        self._calls = 0
        self._trailer = ""  # a trailer begun after the calls, not yet whole
        self._trailed = False  # a whole trailer came: blanks and trailers only from here

    @property
    def calls(self) -> int:
        """The calls read whole so far."""
        return self._calls

    def feed(self, chunk: str) -> Reading:
        if self._verdict == "no":
            return "no"
        at = len(self.text)
        self.text += chunk
        if len(self.text) > HOLD_LIMIT:
            self._verdict = "no"
            return "no"
        for index in range(at, len(self.text)):
            char = self.text[index]
            if self._trailer or (char == "<" and self._ended()):
                read = self._read_trailer(char)
            elif self._trailed:
                read = char in BLANKS
            else:
                read = self._read(char, index)
            if not read:
                self._verdict = "no"
                break
        return self._verdict

    def _read_trailer(self, char: str) -> bool:
        self._trailer += char
        if self._trailer in REPLY_TRAILERS:
            self._trailer, self._trailed = "", True
            return True
        return any(trailer.startswith(self._trailer) for trailer in REPLY_TRAILERS)

    def finished(self) -> bool:
        """Whether the reply read so far ends as nothing but calls can (no trailer half
        read)."""
        return self._verdict == "maybe" and self._calls > 0 and not self._trailer

    def _ended(self) -> bool:
        """Whether the calls read so far are closed, so a trailer may follow them."""
        raise NotImplementedError

    def _read(self, char: str, index: int) -> bool:
        """Read one character; False when the reply can no longer be only calls."""
        raise NotImplementedError


class ReplyCalls(CharReader):
    """Reads a reply of JSON calls from its start (CharReader); `complete()` at the end
    says whether it is nothing but such calls."""

    __slots__ = ("_depth", "_escaped", "_in_string", "_object_at")

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._object_at = 0

    def complete(self) -> bool:
        """At the reply's end: whether all of it is calls (at least one, none left open)."""
        return self.finished() and self._depth == 0

    def _ended(self) -> bool:
        return self._calls > 0 and self._depth == 0

    def _read(self, char: str, index: int) -> bool:
        """Read one character; False when the reply can no longer be only calls."""
        if self._depth == 0:  # between calls: blanks, `;`, or the next call's `{`
            if char == "{":
                self._depth, self._object_at = 1, index
                return True
            return char in BLANKS or (char == ";" and self._calls > 0)
        if self._in_string:
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
            return True
        if char == '"':
            self._in_string = True
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            if self._depth == 0:
                return self._closed(self.text[self._object_at : index + 1])
        return True

    def _closed(self, obj: str) -> bool:
        try:
            parsed: object = json.loads(obj)
        except ValueError:
            return False
        if not is_call(parsed):
            return False
        self._calls += 1
        return True
