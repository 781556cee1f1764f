"""JSON as the servers here write and read it on the wire. Pure.

- `dumps`: compact UTF-8 JSON bytes. A lone UTF-16 surrogate (a client or a model may send
  `"\\ud800"`, and the mock keeps what it was sent) cannot be UTF-8: it is written as its
  JSON escape, which reads back as the same string, so no echo, journal read or rewritten
  chunk ever fails on one.
- `parse_object`: a body, line or field read as the JSON object it should be, or None when
  it is not one (not JSON, nested past the parser's limit, an array, a number). It is the
  standard parser's reading, got from orjson where the two always agree (a stream chunk is
  parsed per token, and orjson takes a fifth of the time): not on a text that could nest
  near a depth limit or hold an integer past 64 bits (orjson reads it as a float), and
  what orjson refuses (a lone surrogate escape, NaN, a BOM) goes to the standard parser.
- `utf8_repaired`: bytes that are not UTF-8 read with U+FFFD for each invalid sequence, as
  `servekit.sse` decodes an event stream, for a reader that must not give up on them.
"""

from __future__ import annotations

import json

import orjson

from guardrail.json_shapes import JSONObject, is_object

__all__ = ["dumps", "parse_object", "utf8_repaired"]

ORJSON_MAX_OPENINGS = 256
"""A text with fewer `[` and `{` than this nests well inside both parsers' depth limits
(orjson's 1024; the standard one's recursion limit, less the caller's own frames)."""
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
"""A translation table: every ASCII digit to `0`, every other byte to a space."""
_LONG_INTEGER = b"0" * 19
"""The shortest run of digits that can be an integer past 64 bits."""


def dumps(obj: object, indent: int | None = None) -> bytes:
    """Compact UTF-8 JSON (or indented by `indent` spaces a level); a lone surrogate is
    written as its escape."""
    if indent is None:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(obj, ensure_ascii=False, indent=indent)
    return text.encode("utf-8", "backslashreplace")


def parse_object(raw: bytes | str) -> JSONObject | None:
    """`raw` as a JSON object, or None when it is not one (not JSON, nested past the
    parser's limit, an array, a number)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    value: object = None
    if _orjson_agrees(data):
        try:
            value = orjson.loads(data)  # a lone surrogate's bytes are not UTF-8: refused
        except orjson.JSONDecodeError:
            value = _standard_loads(raw)
    else:
        value = _standard_loads(raw)
    return value if is_object(value) else None


def utf8_repaired(raw: bytes) -> bytes:
    """`raw` with every invalid UTF-8 sequence read as U+FFFD (the same object when it is
    valid UTF-8). Costs a decode: for a reader's slow path, once `parse_object` refused."""
    try:
        raw.decode()
    except UnicodeDecodeError:
        return raw.decode(errors="replace").encode()
    return raw


def _orjson_agrees(data: bytes) -> bool:
    """Whether orjson reads `data` as the standard parser does whenever it reads it at all:
    no deep nesting, no run of 19 digits (an integer that may not fit 64 bits). Counts and
    a byte translation, not a regular expression: this runs per chunk, and a search for
    `\\d{19}` cost as much as the standard parser's reading."""
    if data.count(b"[") + data.count(b"{") >= ORJSON_MAX_OPENINGS:
        return False
    return _LONG_INTEGER not in data.translate(_DIGITS_AS_ZERO)


def _standard_loads(raw: bytes | str) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None
