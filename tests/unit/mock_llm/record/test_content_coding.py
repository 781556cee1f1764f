"""mock_llm.record.content_coding: a body's gzip or deflate decoded read by read, told apart
from one that was cut before its end, and never decoded past its limit (a gzip bomb)."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mock_llm.record.content_coding import UNREADABLE, BodyDecoder
from mock_llm.record.recorder import MAX_RECORDED_BODY_BYTES

from .test_recording_formats import rechunk

TEXT = b'data: {"choices": [{"delta": {"content": "Nightly at 02:00."}}]}\n\n' * 20
PACKED = gzip.compress(TEXT, mtime=0)
CUT = "the answer's gzip data was cut before its end"


def decode(coding: str, pieces: list[bytes]) -> tuple[bytes, str | None]:
    decoder = BodyDecoder(coding, MAX_RECORDED_BODY_BYTES)
    out = b"".join(decoder(piece) for piece in pieces)
    decoder.finish()
    return out, decoder.problem


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("", TEXT),
        ("identity", TEXT),
        ("gzip", PACKED),
        ("x-gzip", PACKED),
        ("GZip ", PACKED),
        ("deflate", zlib.compress(TEXT)),
        ("gzip", gzip.compress(TEXT[:100], mtime=0) + gzip.compress(TEXT[100:], mtime=0)),
    ],
    ids=["none", "identity", "gzip", "x-gzip", "case-and-space", "deflate", "two-members"],
)
def test_a_whole_body_decodes_to_its_text(coding: str, body: bytes):
    assert decode(coding, [body]) == (TEXT, None)


@given(st.lists(st.integers(0, 10_000), max_size=8))
def test_a_gzip_body_decodes_the_same_however_it_is_cut_into_reads(cuts: list[int]):
    assert decode("gzip", rechunk(PACKED, cuts)) == (TEXT, None)


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("gzip", PACKED[:-8]),
        ("gzip", PACKED[:-1]),
        ("gzip", PACKED[: len(PACKED) // 2]),
        ("gzip", PACKED[:5]),
        ("gzip", b""),
    ],
    ids=["no-trailer", "a-byte-short", "mid-deflate", "mid-header", "empty"],
)
def test_a_gzip_body_cut_before_its_end_is_a_problem(coding: str, body: bytes):
    assert decode(coding, [body])[1] == CUT


def test_a_deflate_body_cut_before_its_checksum_is_a_problem():
    packed = zlib.compress(TEXT)
    assert decode("deflate", [packed[:-4]])[1] == "the answer's deflate data was cut before its end"


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("gzip", PACKED[:-8] + bytes(b ^ 0xFF for b in PACKED[-8:-4]) + PACKED[-4:]),
        ("gzip", PACKED + b"trailing garbage"),
        ("gzip", b"not compressed at all"),
        ("br", TEXT),
    ],
    ids=["wrong-crc", "garbage-after", "not-gzip", "unknown-coding"],
)
def test_a_body_that_does_not_decode_cannot_be_read(coding: str, body: bytes):
    assert decode(coding, [body])[1] == UNREADABLE


GIB = 1 << 30


def bomb(decoded: int, block: int = 1 << 20) -> list[bytes]:
    """A gzip body of `decoded` zero bytes, in one read per decoded `block`."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(block)
    reads = [packer.compress(zeros) + packer.flush(zlib.Z_SYNC_FLUSH)]
    reads += [packer.compress(zeros) + packer.flush(zlib.Z_SYNC_FLUSH)] * (decoded // block - 1)
    return reads  # the trailer never comes: decoding stops long before


@pytest.mark.parametrize("coding", ["gzip", "identity"])
def test_a_body_decoding_past_the_limit_is_a_problem_and_no_read_returns_more(coding: str):
    limit = 64 * 1024
    decoder = BodyDecoder(coding, limit)
    reads = bomb(GIB) if coding == "gzip" else [bytes(1 << 20)] * 1024
    out = [decoder(piece) for piece in reads]

    assert sum(map(len, out)) <= limit
    assert decoder.problem == f"the answer is longer than {limit} bytes"


def test_a_gzip_bomb_in_one_read_decodes_no_more_than_the_limit():
    packed = gzip.compress(bytes(64 << 20), compresslevel=9, mtime=0)
    decoder = BodyDecoder("gzip", 1 << 20)

    assert decoder(packed) == b""
    assert decoder.problem == "the answer is longer than 1048576 bytes"
    assert decoder.decoded == (1 << 20) + 1  # it stopped one byte past the limit


def test_a_body_of_exactly_the_limit_decodes_whole():
    assert decode("gzip", [PACKED])[0] == TEXT
    decoder = BodyDecoder("gzip", len(TEXT))
    assert (decoder(PACKED), decoder.problem) == (TEXT, None)
