"""A body's content coding (`Content-Encoding`), decoded for the recorder. Pure.

The recorder passes bytes on as they came and decodes a copy (identity, gzip, deflate).
`BodyDecoder` takes the body read by read and, at `finish`, says in `problem` why it
cannot be read (unknown coding, bad data, a stream cut before its end).

Deliberate choices:
- A body with a problem is not recorded at all, not even as a `cut` fault: a decoded part
  says nothing reliable of the whole.
- gzip and zlib are told apart by their header (`wbits` 32 + 15), as httpx does, and
  several gzip members are read one after another.
- Completeness is zlib's own `eof`: true only once the trailer's checksum matched.
"""

from __future__ import annotations

import zlib

READABLE_CODINGS = frozenset({"gzip", "x-gzip", "deflate", "identity"})
UNREADABLE = "the answer's content coding cannot be read"
_WBITS = zlib.MAX_WBITS | 32  # gzip or zlib, told by the header


class BodyDecoder:
    """Decodes a body's content coding read by read (the client gets the raw bytes)."""

    def __init__(self, coding: str) -> None:
        self._coding = coding.strip().lower()
        self.problem: str | None = None if self._coding in ("", *READABLE_CODINGS) else UNREADABLE
        compressed = self._coding not in ("", "identity")
        self._zlib = zlib.decompressobj(_WBITS) if compressed else None

    def __call__(self, data: bytes) -> bytes:
        if self._zlib is None or self.problem is not None:
            return data
        try:
            out = self._zlib.decompress(data)
            while self._zlib.eof and self._zlib.unused_data:  # the next gzip member
                rest = self._zlib.unused_data
                self._zlib = zlib.decompressobj(_WBITS)
                out += self._zlib.decompress(rest)
        except zlib.error:
            self.problem = UNREADABLE
            return b""
        return out

    def finish(self) -> None:
        """The body has ended (or broken off): a compressed stream must have ended too."""
        if self._zlib is not None and self.problem is None and not self._zlib.eof:
            self.problem = f"the answer's {self._coding} data was cut before its end"
