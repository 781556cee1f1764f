"""The embedded demo's default answer (scaffold_guard/app/demo_flows.yaml) over the app's real
prompts.

The demo's mock quotes what the app sent it: these tests build the app's own system prompt
from the sample notes (retrieval, then the grounded or deflect prompt) and play the demo's
`default` flow on it, as the mock does for a question with no trigger.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mock_llm.flows.flow_file import load_flow_file
from mock_llm.play.response_plan import RequestShape, plan_response
from scaffold_guard.app.cli import DEMO_FLOWS
from scaffold_guard.app.config import BUNDLED_NOTES
from scaffold_guard.app.rag.grounding import is_grounded
from scaffold_guard.app.rag.index import NotesIndex
from scaffold_guard.app.rag.prompts import build_deflect_prompt, build_grounded_prompt

from ..conftest import META, sent_body

DEFAULT = load_flow_file(DEMO_FLOWS)["default"]


@pytest.fixture(scope="module")
def index() -> Iterator[NotesIndex]:
    with NotesIndex(BUNDLED_NOTES, ":memory:", refresh_interval_s=3600) as idx:
        yield idx


def demo_answer(index: NotesIndex, question: str) -> str:
    """The demo mock's answer to `question`, sent with the prompt the app would build."""
    hits = index.search(question)
    system = build_grounded_prompt(hits) if is_grounded(hits) else build_deflect_prompt()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": question},
    ]
    shape = RequestShape(stream=False, include_usage=False, messages=messages)
    plan = plan_response(DEFAULT.steps[0], META, "reasoning_content", shape)
    return sent_body(plan)["choices"][0]["message"]["content"]


def test_a_plain_question_is_answered_with_the_notes_own_sentences_and_their_note(
    index: NotesIndex,
):
    answer = demo_answer(index, "When do backups run?")
    assert answer.startswith("From your notes:\n- ")
    assert "(source: /homelab/backups.md)" in answer


def test_a_certificates_question_quotes_the_certificates_note(index: NotesIndex):
    assert "(source: /homelab/certificates.md)" in demo_answer(
        index, "How do I renew the certificates?"
    )


def test_a_question_the_notes_do_not_cover_gets_the_demo_deflection(index: NotesIndex):
    step = DEFAULT.steps[0]
    assert step.extract is not None
    assert demo_answer(index, "What is the capital of France?") == step.extract.fallback
