"""The lines of an NDJSON body (Ollama's streams), in whatever pieces it arrives. Pure.

Shared by the guard proxy's Ollama routes (guard.wire.ollama) and the mock's recorder
(mock_llm.record.recording_ollama). `servekit.sse.LineBuffer` does the cutting, as for the
event streams, so a line longer than `max_line_bytes` raises `LineTooLong` instead of
growing without bound: the body comes from a server we do not control.
"""

from __future__ import annotations

from servekit.sse import DEFAULT_MAX_LINE_BYTES, LineBuffer

__all__ = ["NdjsonLines"]


class NdjsonLines:
    """A body's lines, each with its own line end, in whatever pieces the body arrives."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._lines = LineBuffer(max_line_bytes, "NDJSON")

    def feed(self, piece: bytes) -> list[bytes]:
        complete = self._lines.complete(piece)
        if complete is None:
            return []
        return [line + b"\n" for line in complete.split(b"\n")]

    def finish(self) -> list[bytes]:
        """The last line, when the body ended without its line end."""
        rest = self._lines.rest()
        return [rest] if rest else []
