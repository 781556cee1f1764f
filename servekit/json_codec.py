"""JSON as the servers here write and read it on the wire. Pure.

- `dumps`: compact UTF-8 JSON bytes. A lone UTF-16 surrogate (a client or a model may send
  `"\\ud800"`, and the mock keeps what it was sent) cannot be UTF-8: it is written as its
  JSON escape, which reads back as the same string, so no echo, journal read or rewritten
  chunk ever fails on one.
- `json_object`: a body, line or field read as the JSON object it should be, or None when
  it is not one (not JSON, nested past the parser's limit, an array, a number).
"""

from __future__ import annotations

import json
from typing import Any, cast

__all__ = ["dumps", "json_object"]


def dumps(obj: object, indent: int | None = None) -> bytes:
    """Compact UTF-8 JSON (or indented by `indent` spaces a level); a lone surrogate is
    written as its escape."""
    if indent is None:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(obj, ensure_ascii=False, indent=indent)
    return text.encode("utf-8", "backslashreplace")


def json_object(raw: bytes | str) -> dict[str, Any] | None:
    """`raw` as a JSON object, or None when it is not one (not JSON, nested past the
    parser's limit, an array, a number)."""
    try:
        value: object = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None
