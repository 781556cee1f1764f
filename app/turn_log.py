"""The per-turn log line, one per turn, in a fixed format that tools and tests parse.

`chat turn=<id> mode=<grounded|deflected> rounds=N tools=N thinking_chars=N content_chars=N
total_ms=N retries=N`. Only counts and our own identifiers go in: text that comes from
users or from the model never does, so a log line cannot be forged through a question.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

LOGGER_NAME = "app.chat"


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


def format_turn_line(stats: TurnStats) -> str:
    return (
        f"chat turn={stats.turn_id} mode={stats.mode} rounds={stats.rounds} tools={stats.tools}"
        f" thinking_chars={stats.thinking_chars} content_chars={stats.content_chars}"
        f" total_ms={stats.total_ms} retries={stats.retries}"
    )


def configure_chat_log(log_file: Path) -> logging.Logger:
    """The chat logger, writing to stderr and to `log_file` (created with its folder)."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.INFO)
    target = str(log_file.resolve())
    if not any(getattr(h, "baseFilename", None) == target for h in logger.handlers):
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
    return logger
