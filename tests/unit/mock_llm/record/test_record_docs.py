"""docs/mock_llm.md, "Record and replay", says what the recorder does: its example is a
valid recording, its options are the command's, and its redaction example holds."""

from __future__ import annotations

import re
from pathlib import Path

from mock_llm.cli import parse_args, parse_record_args
from mock_llm.flows.flow_file import parse_flows
from mock_llm.record.redaction import Redactor, compile_patterns

DOCS = Path(__file__).parents[4] / "docs" / "mock_llm.md"


def section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text.split("\n## Record and replay\n", 1)[1].split("\n## ", 1)[0]


def test_the_example_recording_is_a_valid_flow_file_whose_texts_are_its_chunks():
    [example] = re.findall(r"```yaml\n(.*?)```", section(), flags=re.DOTALL)
    flow = parse_flows(example, "docs")["lfm2-leak"]
    leak, answer = flow.steps
    assert (
        leak.content
        == "<|tool_call_start|>[read(path='/homelab/backup-notes.md')]<|tool_call_end|>"
    )
    assert len(leak.recorded) == 6
    assert (answer.reasoning, answer.content) == (
        "The notes say nightly.",
        "Backups run nightly at 02:00.",
    )


def test_the_options_table_lists_the_record_commands_options():
    table = section().split("| option | default | meaning |", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"^\| `(--[a-z-]+)", table, flags=re.MULTILINE))
    args = vars(parse_record_args(["--upstream", "http://h/v1", "--out", "f"]))
    assert documented == {"--" + name.replace("_", "-") for name in args}


def test_the_mocks_options_table_has_the_replay_pacing():
    text = DOCS.read_text(encoding="utf-8")
    assert "| `--replay-pacing` | `real` |" in text
    assert parse_args([]).replay_pacing == 1.0


def test_the_redaction_example_is_what_the_redactor_does():
    redactor = Redactor(compile_patterns([r"sk-[a-z0-9]+"]))
    assert redactor.pieces(["my sk-", "a1b2", " is set"]) == ["my [REDACTED]", "", " is set"]
    assert '"my [REDACTED]" | "" | " is set"' in section()
