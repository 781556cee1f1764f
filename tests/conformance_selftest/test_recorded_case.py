"""A leak recorded once becomes a case the kit runs: record, state the outcome, run the kit.

An app with the guardrail talks to its model through `python -m mock_llm record`; the
model (here a mock standing in for LFM2, its answer cut word by word with pauses, as a
real stream arrives) answers with its own tool-call syntax, and the app's one recovery
gets a plain answer. The recorder writes both answers as one flow, the trigger's name.
The user adds what a guarded app must make of it (an `expect` block) and hands the file to
the kit (`--cases`), which plays the recording against the reference app it starts itself
and judges the CASE test by that block.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
import yaml
from openai.types.chat import ChatCompletionMessageParam

from guardrail.policy import CORRECTION_INSTRUCTION
from mock_llm import MockClient, load_flow_file, serve_mock
from mock_llm.record.recorder import RecorderSettings, Upstream, serve_recorder

from ..support.deadlines import DEADLINE_S
from .kit_runs import KIT_DEADLINE_S, run_kit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(KIT_DEADLINE_S + 4 * DEADLINE_S)]

LEAK = "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>"
ANSWER = "Backups run nightly at 02:00, then a copy goes to the NAS."
MODEL = f"""
flows:
  lfm2-leak:
    steps:
      - content: "{LEAK}"
        chunking: 7
        delay_ms: 15
      - content: "{ANSWER}"
        delay_ms: 10
"""
QUESTION = "When do backups run? [[mock:lfm2-leak#seen-once]]"
SYSTEM = "You answer from the notes."


def record_the_leak(out: Path) -> None:
    """The app's two requests of the turn (the question, then its one recovery), through
    the recorder."""
    with serve_mock() as model_url, MockClient(model_url, timeout=DEADLINE_S) as model:
        model.add_flows(MODEL)
        settings = RecorderSettings(Upstream.parse(f"{model_url}/v1"), out)
        with serve_recorder(settings) as (recorder_url, recorder):
            app = openai.OpenAI(base_url=f"{recorder_url}/v1", api_key="sk-app", timeout=DEADLINE_S)
            for system in (SYSTEM, f"{SYSTEM}\n\n{CORRECTION_INSTRUCTION}"):
                messages: list[ChatCompletionMessageParam] = [
                    {"role": "system", "content": system},
                    {"role": "user", "content": QUESTION},
                ]
                stream = app.chat.completions.create(model="lfm2", stream=True, messages=messages)
                for _ in stream:  # read to its end, as the app does
                    pass
            assert recorder.wait_for(saved=2, timeout_s=DEADLINE_S), "the recorder wrote nothing"


def test_a_recorded_leak_with_its_expected_outcome_is_a_case_the_kit_passes(tmp_path: Path):
    recording = tmp_path / "leaks.yaml"
    record_the_leak(recording)
    flow = load_flow_file(recording)["lfm2-leak"]
    assert [len(step.recorded) for step in flow.steps] == [11, 12]  # the model's own chunks
    assert (flow.steps[0].content, flow.steps[1].content) == (LEAK, ANSWER)

    document = yaml.safe_load(recording.read_text(encoding="utf-8"))  # what the user adds
    document["flows"]["lfm2-leak"]["canary"] = "read(path="
    document["flows"]["lfm2-leak"]["expect"] = {
        "shown": ANSWER, "recovery": True, "stripped_chars": len(LEAK), "error": None,
        "requests": 2,
    }  # fmt: skip
    recording.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")

    run = run_kit(None, None, None, tmp_path / "kit", "--cases", str(recording), "-k", "case")
    assert run.returncode == 0, run.describe()
    assert [(c.name, c.outcome) for c in run.cases] == [
        ("test_a_recorded_case_ends_as_its_flow_expects[lfm2-leak]", "passed")
    ]
    assert run.report["CASE"] == "passed"
