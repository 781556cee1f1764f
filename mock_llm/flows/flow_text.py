"""A flow file's text as read from disk, and the error a flow file is refused with.

Apart from the parser (mock_llm.flows.flow_file) so that a reader of a flow file's errors, such
as the mock's client, loads no YAML parser until it parses one.
"""

from __future__ import annotations

import gzip
from pathlib import Path


class FlowFileError(ValueError):
    """A flow file is unreadable or invalid; the message names the file and line."""

    def __init__(self, source: str, line: int | None, problem: str) -> None:
        self.source = source
        self.line = line
        self.problem = problem
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")


def read_flow_text(path: str | Path) -> str:
    """A flow file's text, decompressed when its name ends in .gz; FlowFileError when it
    cannot be read."""
    path = Path(path)
    try:
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
        text = data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # gzip.BadGzipFile is an OSError
        raise FlowFileError(str(path), None, f"cannot read the file: {exc}") from exc
    return text
