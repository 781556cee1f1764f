"""What the kit asks: the question that plays a flow, under a KEY no other turn uses.

Every turn asks its question with a fresh KEY (`[[mock:FLOW#KEY]]`, the mock's trigger
grammar), so turns never mix, also under pytest-xdist against one shared mock.

Deliberate choices:
- KEYs are unique per run (a run id, the process and a counter), never part of a test id,
  so collection is stable and a long-running external mock never mixes two runs' turns.
- The preflight's turns have KEYs of their own, which say so (`-wiring-`, `-preflight-`).
"""

from __future__ import annotations

import os
import uuid

QUESTION = "When do backups run?"
RUN_ID = uuid.uuid4().hex[:8]
_counter = iter(range(1, 1_000_000_000))


def question(flow: str, key: str) -> str:
    """The question that plays `flow` under `key` (the mock's trigger grammar)."""
    return f"{QUESTION} [[mock:{flow}#{key}]]"


def new_key() -> str:
    """A KEY no other turn of this run (or of another run on the same mock) uses."""
    return f"sg{RUN_ID}p{os.getpid()}n{next(_counter)}"


def wiring_key() -> str:
    """The KEY of the preflight's wiring turn (one per worker and run)."""
    return f"{RUN_ID}-wiring-{os.getpid()}"


def preflight_key(part: str) -> str:
    """The KEY of the preflight's turn for `part` (one per worker and run)."""
    return f"{RUN_ID}-preflight-{part}-{os.getpid()}"
