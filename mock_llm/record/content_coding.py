"""A body's content coding (`Content-Encoding`), decoded for the recorder. Pure.

The recorder passes bytes on as they came and decodes a copy (identity, gzip, deflate).
`BodyDecoder` takes the body read by read and says in `problem` why it cannot be read
(unknown coding, bad data, more than `limit` bytes decoded, and at `finish` a stream cut
before its end).

Deliberate choices:
- A body with a problem is not recorded at all, not even as a `cut` fault: a decoded part
  says nothing reliable of the whole.
- gzip and zlib are told apart by their header (`wbits` 32 + 15), as httpx does, and
  several gzip members are read one after another.
- Completeness is zlib's own `eof`: true only once the trailer's checksum matched.
- Decoding stops one byte past `limit`, whatever the data asks for (zlib's `max_length`):
  a gzip bomb of gigabytes costs at most `limit` bytes, and no read can return more.
"""

from __future__ import annotations

import zlib

READABLE_CODINGS = frozenset({"gzip", "x-gzip", "deflate", "identity"})
UNREADABLE = "the answer's content coding cannot be read"
_WBITS = zlib.MAX_WBITS | 32  # gzip or zlib, told by the header


class BodyDecoder:
    """Decodes a body's content coding read by read (the client gets the raw bytes), up to
    `limit` decoded bytes: past it, `problem` says so and nothing more is decoded."""

    def __init__(self, coding: str, limit: int) -> None:
        self._coding = coding.strip().lower()
        self._limit = limit
        self.decoded = 0
        self.problem: str | None = None if self._coding in ("", *READABLE_CODINGS) else UNREADABLE
        compressed = self._coding not in ("", "identity")
        self._zlib = zlib.decompressobj(_WBITS) if compressed else None

    def __call__(self, data: bytes) -> bytes:
        if self.problem is not None:
            return b""
        room = self._limit - self.decoded + 1  # one byte past the limit tells it was passed
        inflater = self._zlib
        if inflater is not None:
            try:
                data = inflater.decompress(data, room)
                while inflater.eof and inflater.unused_data and len(data) < room:  # next member
                    rest = inflater.unused_data
                    inflater = self._zlib = zlib.decompressobj(_WBITS)
                    data += inflater.decompress(rest, room - len(data))
            except zlib.error:
                self.problem = UNREADABLE
                return b""
        self.decoded += len(data)
        if self.decoded > self._limit:
            self.problem = f"the answer is longer than {self._limit} bytes"
            self._zlib = None  # what it held is never read
            return b""
        return data

    def finish(self) -> None:
        """The body has ended (or broken off): a compressed stream must have ended too."""
        if self._zlib is not None and self.problem is None and not self._zlib.eof:
            self.problem = f"the answer's {self._coding} data was cut before its end"
