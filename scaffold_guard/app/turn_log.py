"""The per-turn log: one line per turn in a fixed format that tools and tests parse.

`chat turn=<id> mode=<grounded|deflected|none> rounds=N tools=N thinking_chars=N
content_chars=N total_ms=N retries=N scaffold_stripped=N` (G10; a recovery counts in
`rounds`, never `retries`), plus the strip warnings and, for a turn that did not end
`done`, its outcome and error type.

Deliberate choices:
- Only counts and our own ids go in, never user or model text, so a line cannot be forged
  through a question (a warning's model span is a quoted one-line literal).
- Each app owns its `TurnLog`, outside logging's global registry and not propagating, so
  two apps in one process never write into each other's files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

LOGGER_NAME = "app.chat"
LINE_FORMAT = "%(asctime)s %(levelname)s %(message)s"


@dataclass(frozen=True)
class TurnStats:
    turn_id: str
    mode: str
    rounds: int
    tools: int
    thinking_chars: int
    content_chars: int
    total_ms: int
    retries: int
    scaffold_stripped: int


def format_turn_line(stats: TurnStats) -> str:
    return (
        f"chat turn={stats.turn_id} mode={stats.mode} rounds={stats.rounds} tools={stats.tools}"
        f" thinking_chars={stats.thinking_chars} content_chars={stats.content_chars}"
        f" total_ms={stats.total_ms} retries={stats.retries}"
        f" scaffold_stripped={stats.scaffold_stripped}"
    )


class TurnLog:
    """One app's chat log: writes to `log_file` (folder created; opened on first line)."""

    def __init__(self, log_file: Path) -> None:
        self.logger = logging.Logger(LOGGER_NAME, logging.INFO)
        self.logger.propagate = False
        log_file.parent.mkdir(parents=True, exist_ok=True)
        self._add(logging.FileHandler(log_file, encoding="utf-8", delay=True))

    def echo_to(self, stream: TextIO) -> None:
        """Also write every line to `stream` (python -m app echoes to stderr)."""
        self._add(logging.StreamHandler(stream))

    def _add(self, handler: logging.Handler) -> None:
        handler.setFormatter(logging.Formatter(LINE_FORMAT))
        self.logger.addHandler(handler)

    def close(self) -> None:
        for handler in list(self.logger.handlers):
            self.logger.removeHandler(handler)
            handler.close()
