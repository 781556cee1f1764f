"""GET /api/info: what the page needs to know about the model behind the app.

`model` is the configured model name. `demo` is null with a real model; when the model is
the embedded mock (`python -m app` with no model configured) it holds the mock's journal
URL and the failure examples the page offers as one-click buttons: each names a built-in
mock_llm flow and a question to send with it. The page adds `[[mock:FLOW#KEY]]` with a
fresh KEY per click, so a repeated example plays its flow from the start, and links the
turn to `journal?key=KEY`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter

from scaffold_guard.app.api.deps import TurnDepsDep

router = APIRouter()


@dataclass(frozen=True)
class DemoExample:
    label: str
    flow: str
    question: str


DEMO_EXAMPLES = (
    DemoExample("Split markup", "scaffold-split", "When do backups run?"),
    DemoExample("Markup twice", "scaffold-repeat", "When do backups run?"),
    DemoExample("Markup in prose", "scaffold-mixed", "When do backups run?"),
    DemoExample("Thinking with markup", "thinking-scaffold", "When do backups run?"),
    DemoExample("A tool call", "tool-then-answer", "What do the backup notes say?"),
    DemoExample("Upstream 503", "error-then-ok", "When do backups run?"),
    DemoExample("Dropped stream", "drop-mid-stream", "When do backups run?"),
    DemoExample("Hostile HTML", "xss", "When do backups run?"),
)
"""The guardrail's failure shapes, each a built-in flow (mock_llm/flows/builtin_flows.yaml)."""


@router.get("/api/info")
async def info(deps: TurnDepsDep) -> dict[str, Any]:
    settings = deps.settings
    mock_url = settings.embedded_mock_url
    demo = None
    if mock_url is not None:
        demo = {
            "mock_url": mock_url,
            "journal_url": f"{mock_url}/_mock/requests",
            "examples": [
                {"label": e.label, "flow": e.flow, "question": e.question} for e in DEMO_EXAMPLES
            ],
        }
    return {"model": settings.llm_model, "demo": demo}
