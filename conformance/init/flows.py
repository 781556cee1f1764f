"""init's own flows, added to the mock at start, and the KEYs of its turns.

Deliberate choices:
- The flows' texts are ones no page shows by chance, so that "the element holding this
  text" names one element. The error turn plays the built-in `scaffold-repeat`.
"""

from __future__ import annotations

import uuid
from typing import Any

ANSWER = "Init probe answer: the backups of the lab run nightly at two, restore drills on Sunday."
REASONING = "Init probe reasoning: the runbook names two o'clock, so the answer is direct."
SLOW = " ".join(["Init probe slow answer, word after word, while the page streams it."] * 12)
FLOWS: dict[str, Any] = {
    "flows": {
        "sg-init-answer": {"description": "conformance init: a clean answer",
                           "steps": [{"content": ANSWER}]},
        "sg-init-slow": {"description": "conformance init: a slow answer (about 10 s)",
                         "steps": [{"content": SLOW, "delay_ms": 100}]},
        "sg-init-thinking": {"description": "conformance init: reasoning, then an answer",
                             "steps": [{"reasoning": REASONING, "content": ANSWER}]},
    }
}  # fmt: skip
"""init's own flows; the error turn plays the built-in `scaffold-repeat`."""


def new_key() -> str:
    return f"sginit{uuid.uuid4().hex[:10]}"
