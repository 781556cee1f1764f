"""`servekit.json_codec.parse_object` reads exactly what the standard parser reads.

It takes orjson's reading where the two parsers agree and the standard parser's elsewhere
(docs/benchmarks.md, "The guard proxy's cost"): the result, types included, is always the
standard parser's, and None where that one refuses.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servekit.json_codec import parse_object


def standard(raw: bytes | str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def same(a: object, b: object) -> bool:
    """Equal, and of the same types all the way down (1 is not 1.0; NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)  # type: ignore[arg-type]
    return a == b


EDGES = [
    '{"a": 123456789012345678901234567890}',  # past 64 bits: orjson would read a float
    '{"a": 18446744073709551616}',
    '{"a": -9223372036854775809}',
    '{"a": 9223372036854775807}',
    '{"a": NaN, "b": Infinity, "c": -Infinity}',
    '{"a": 1e400}',
    '{"a": 1e-400}',
    '{"a": -0.0}',
    '{"a": "\\ud800"}',  # a lone surrogate escape
    '{"a": "\\ud83d\\ude00"}',
    '\ufeff{"a": 1}',  # a BOM in a str: the standard parser refuses it
    '{"a": 1, "a": 2, "b": 3}',
    '{"a": "\x01"}',
    '{"a": 1} x',
    "[1, 2]",
    "3",
    "",
    "[" * 900 + "]" * 900,
    '{"a": ' + "[" * 990 + "]" * 990 + "}",
    '{"a": ' + "[" * 1020 + "]" * 1020 + "}",
    "[" * 100_000,
]


@pytest.mark.parametrize("raw", EDGES)
def test_an_edge_reads_as_the_standard_parser_reads_it(raw: str):
    for text in (raw, raw.encode("utf-8", "surrogatepass")):
        assert same(parse_object(text), standard(text))


def test_bytes_with_a_bom_or_invalid_utf8_read_as_the_standard_parser_reads_them():
    for raw in (b'\xef\xbb\xbf{"a": 1}', b'{"a": "\xff"}', '{"a": "é"}'.encode("utf-16")):
        assert same(parse_object(raw), standard(raw))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), JSON_VALUES, max_size=5))
def test_any_object_reads_as_the_standard_parser_reads_it(value: dict[str, Any]):
    raw = json.dumps(value, ensure_ascii=False)
    assert same(parse_object(raw), standard(raw))
    assert same(
        parse_object(raw.encode("utf-8", "surrogatepass")),
        standard(raw.encode("utf-8", "surrogatepass")),
    )
